import { dkimSign } from 'mailauth/lib/dkim/sign.js';

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
 * (mailauth's default list lacks List-Unsubscribe-Post). Custom headers stay unsigned: relays
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

/**
 * The message with a DKIM-Signature header in front (rsa-sha256, relaxed/relaxed), by mailauth,
 * the library the receiving side verifies with. Strict mode: a key shorter than 1024 bits or a
 * malformed selector or domain throws instead of sending a signature receivers would discard.
 */
export async function signMessage(raw: Buffer, key: DkimSigningKey): Promise<Buffer> {
  const signer = { signingDomain: key.domain, selector: key.selector, privateKey: key.privateKeyPem };
  // mailauth signs once per signatureData entry; its typings also ask for the fields at the top.
  const result = await dkimSign(raw, {
    ...signer,
    signatureData: [signer],
    canonicalization: 'relaxed/relaxed',
    algorithm: 'rsa-sha256',
    headerList: SIGNED_HEADERS,
    strict: true,
  });
  const [failure] = result.errors;
  // The error text is mailauth's own (a code and a reason); the key itself never appears in it.
  if (failure) throw new Error(`dkim: could not sign for ${key.domain} (${failure.err.code ?? 'error'}: ${failure.err.message})`);
  if (result.signatures === '') throw new Error(`dkim: no signature was made for ${key.domain}`);
  return Buffer.concat([Buffer.from(result.signatures, 'latin1'), raw]);
}
