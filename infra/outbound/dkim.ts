import { createPrivateKey, type KeyObject } from 'node:crypto';
import DKIM from 'nodemailer/lib/dkim';

/** The signing half of a domain's DKIM key; the private key comes from the secret vault and goes nowhere else. */
export interface DkimSigningKey {
  /** d=: the sending domain, so the signature aligns with From for DMARC. */
  domain: string;
  selector: string;
  privateKeyPem: string;
}

/**
 * The header fields the signature covers, when present (absent ones are skipped). The
 * addresses, subject, date, id and threading a reader sees; the MIME headers, so nobody can
 * re-wrap the body; and both List-Unsubscribe headers, which RFC 8058 3.1 requires to be signed
 * (no library's default list has List-Unsubscribe-Post). Custom headers stay unsigned: relays
 * rewrite some, and a broken signature costs more than they protect.
 */
export const SIGNED_HEADERS = [
  'From',
  'Sender',
  'Reply-To',
  'Subject',
  'Date',
  'Message-ID',
  'To',
  'Cc',
  'In-Reply-To',
  'References',
  'MIME-Version',
  'Content-Type',
  'Content-Transfer-Encoding',
  'Content-ID',
  'Content-Description',
  'List-Unsubscribe',
  'List-Unsubscribe-Post',
];

/** RFC 6376 3.1: a selector is a dot-separated sequence of sub-domain labels. */
const SELECTOR = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
/** RFC 8301 3.2: signers must use RSA keys of at least 1024 bits. */
const MIN_RSA_BITS = 1024;
const CACHED_KEYS = 1000;

/**
 * Parsed keys by PEM, least recently used first out. Parsing a 2048-bit PEM costs as much as
 * the signature itself; a burst from one domain parses its key once.
 */
const keys = new Map<string, KeyObject>();

/**
 * The message with a DKIM-Signature header in front (rsa-sha256, relaxed/relaxed), by nodemailer's
 * DKIM signer over a parsed key. Throws instead of sending what receivers would discard: a key
 * that is not RSA of at least 1024 bits, a malformed selector, a message nothing was signed for
 * (nodemailer passes a message through unsigned when the signature fails).
 */
export async function signMessage(raw: Buffer, key: DkimSigningKey): Promise<Buffer> {
  if (!SELECTOR.test(key.selector))
    throw new Error(`dkim: could not sign for ${key.domain}: ${JSON.stringify(key.selector)} is not a selector`);
  const signer = new DKIM({
    domainName: key.domain,
    keySelector: key.selector,
    privateKey: parsedKey(key),
    headerFieldNames: SIGNED_HEADERS.join(':'),
  });
  const signed = Buffer.concat(await signer.sign(raw).toArray());
  if (!signed.subarray(0, 15).equals(SIGNATURE_START)) throw new Error(`dkim: could not sign for ${key.domain}`);
  return signed;
}

const SIGNATURE_START = Buffer.from('DKIM-Signature:');

function parsedKey({ domain, privateKeyPem }: DkimSigningKey): KeyObject {
  const cached = keys.get(privateKeyPem);
  if (cached) {
    keys.delete(privateKeyPem);
    keys.set(privateKeyPem, cached);
    return cached;
  }
  let parsed: KeyObject;
  try {
    parsed = createPrivateKey(privateKeyPem);
  } catch {
    // Node's message names the parse error only; nothing of the key goes into ours either way.
    throw new Error(`dkim: could not sign for ${domain}: the private key does not parse`);
  }
  const bits = parsed.asymmetricKeyDetails?.modulusLength ?? 0;
  if (parsed.asymmetricKeyType !== 'rsa' || bits < MIN_RSA_BITS)
    throw new Error(`dkim: could not sign for ${domain}: an RSA key of at least ${MIN_RSA_BITS} bits is needed`);
  keys.set(privateKeyPem, parsed);
  if (keys.size > CACHED_KEYS) keys.delete(keys.keys().next().value!);
  return parsed;
}
