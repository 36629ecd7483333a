import crypto from 'node:crypto';

/** A request without an Idempotency-Key gets a stream of its own. */
export const newRequestStreamSuffix = () => `r${crypto.randomBytes(12).toString('hex')}`;
/**
 * A key's stream: a digest of the key, so any allowed key fits a stream id. Streams are per mode
 * partition (domain/shared/partitions.ts), so a test event never replays for, or blocks, a live one.
 */
export const keyStreamSuffix = (idempotencyKey: string) =>
  `k${crypto.createHash('sha256').update(idempotencyKey).digest('hex').slice(0, 40)}`;
export const fingerprintOf = (canonical: string) => crypto.createHash('sha256').update(canonical).digest('base64url');
