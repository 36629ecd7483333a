import crypto from 'node:crypto';

/**
 * Standard Webhooks signature: base64 HMAC-SHA256 over `<id>.<timestamp>.<body>` keyed with the
 * secret's decoded bytes. Several secrets (during a rotation) give several space-separated entries.
 */
export function signatureHeader(secrets: string[], messageId: string, timestamp: number, body: string): string {
  const content = `${messageId}.${timestamp}.${body}`;
  return secrets
    .map(
      (s) =>
        `v1,${crypto
          .createHmac('sha256', Buffer.from(s.replace(/^whsec_/, ''), 'base64'))
          .update(content)
          .digest('base64')}`,
    )
    .join(' ');
}
