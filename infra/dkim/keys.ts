import crypto from 'node:crypto';
import { promisify } from 'node:util';

const generateKeyPair = promisify(crypto.generateKeyPair);

export interface DkimKeyPair {
  /** PKCS#8 PEM: goes to the secret vault, never into an event or a log. */
  privateKeyPem: string;
  /** base64 of the DER SubjectPublicKeyInfo: the `p=` of the DKIM record. */
  publicKey: string;
}

/**
 * A 2048-bit RSA pair for DKIM (RFC 8301: at least 1024, 2048 recommended; longer keys overflow
 * what some DNS hosts let a TXT record hold). Generated off the event loop: it takes tens to
 * hundreds of milliseconds.
 */
export async function generateDkimKeyPair(): Promise<DkimKeyPair> {
  const { privateKey, publicKey } = await generateKeyPair('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'der' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  return { privateKeyPem: privateKey, publicKey: publicKey.toString('base64') };
}
