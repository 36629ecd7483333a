import crypto from 'node:crypto';

/**
 * The acceptance link's token: `<invitation id>.<nonce>.<mac>`. Id and nonce are in events (the
 * audit replay prints them); the MAC, under a server key (`server_secrets`) of its own, is what only
 * the mail's reader has. A refresh draws a new nonce, so only the newest link works.
 */
export const invitationToken = (key: Buffer, invitationId: string, nonce: string) =>
  `${invitationId}.${nonce}.${sign(key, `${invitationId}.${nonce}`)}`;

export function readInvitationToken(key: Buffer, token: string): { invitationId: string; nonce: string } | null {
  const parts = token.split('.');
  if (parts.length !== 3) return null;
  const [invitationId, nonce, given] = parts as [string, string, string];
  const expected = Buffer.from(sign(key, `${invitationId}.${nonce}`));
  const actual = Buffer.from(given);
  return expected.length === actual.length && crypto.timingSafeEqual(expected, actual) ? { invitationId, nonce } : null;
}

export const newInvitationNonce = () => crypto.randomBytes(12).toString('base64url');

const sign = (key: Buffer, text: string) =>
  crypto.createHmac('sha256', key).update(`member-invitation:${text}`).digest('base64url').slice(0, 32);
