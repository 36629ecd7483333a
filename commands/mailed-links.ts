import crypto from 'node:crypto';

/** What a mailed link names: the thing it answers for, and the nonce of the mail it came in. */
export interface MailedLink {
  id: string;
  nonce: string;
}

/**
 * Links mailed to a person who has no account with us yet (a forward's destination, an invitee):
 * `<id>.<nonce>.<mac>`. The id and the nonce are in events (the audit replay prints them); the MAC,
 * under a key of the server (`server_secrets`), is what nobody but the mail's reader has. Each
 * purpose signs its own text, so a link of one kind never opens another. The deciders keep the
 * nonce of the last mail, so a resend retires the earlier links.
 */
export function mailedLinks(purpose: string) {
  const mac = (key: Buffer, id: string, nonce: string) =>
    crypto.createHmac('sha256', key).update(`${purpose}:${id}.${nonce}`).digest('base64url').slice(0, 32);
  return {
    token: (key: Buffer, id: string, nonce: string): string => `${id}.${nonce}.${mac(key, id, nonce)}`,
    /** The id and nonce a token names, or null when it is not one we made for this purpose. */
    read(key: Buffer, token: string): MailedLink | null {
      const [id, nonce, given, extra] = token.split('.');
      if (!id || !nonce || !given || extra !== undefined) return null;
      const expected = Buffer.from(mac(key, id, nonce));
      const actual = Buffer.from(given);
      if (expected.length !== actual.length || !crypto.timingSafeEqual(expected, actual)) return null;
      return { id, nonce };
    },
    newNonce: (): string => crypto.randomBytes(12).toString('base64url'),
  };
}
