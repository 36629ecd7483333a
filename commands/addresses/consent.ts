import crypto from 'node:crypto';

/**
 * The link a forward's destination answers with: `<forward id>.<nonce>.<mac>`. The forward id
 * and the nonce are in events (the audit replay prints them); the MAC, under a key of the server
 * (`server_secrets`), is what nobody but the mail's reader has. Only the nonce of the last link
 * mailed works (domain/addresses/decide.ts), so a resend retires the earlier links.
 */
export function consentToken(key: Buffer, forwardId: string, nonce: string): string {
  return `${forwardId}.${nonce}.${mac(key, forwardId, nonce)}`;
}

/** The forward and nonce a token names, or null when it is not one we made. */
export function readConsentToken(key: Buffer, token: string): { forwardId: string; nonce: string } | null {
  const [forwardId, nonce, given, extra] = token.split('.');
  if (!forwardId || !nonce || !given || extra !== undefined) return null;
  const expected = Buffer.from(mac(key, forwardId, nonce));
  const actual = Buffer.from(given);
  if (expected.length !== actual.length || !crypto.timingSafeEqual(expected, actual)) return null;
  return { forwardId, nonce };
}

/** A fresh nonce for a consent link. */
export const newConsentNonce = () => crypto.randomBytes(12).toString('base64url');

const mac = (key: Buffer, forwardId: string, nonce: string) =>
  crypto.createHmac('sha256', key).update(`forward-consent:${forwardId}.${nonce}`).digest('base64url').slice(0, 32);
