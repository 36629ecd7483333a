import crypto from 'node:crypto';

/** Ids of contact events and automations (kept apart from commands/ids.ts, which the contacts work edits). */
export const newContactEventId = () => `cev_${crypto.randomBytes(12).toString('hex')}`;
/** `n` ids from one draw of randomness (a batch needs up to 100). */
export function newContactEventIds(n: number): string[] {
  const hex = crypto.randomBytes(12 * n).toString('hex');
  return Array.from({ length: n }, (_, i) => `cev_${hex.slice(i * 24, i * 24 + 24)}`);
}
export const newAutomationId = () => `aut_${crypto.randomBytes(12).toString('hex')}`;
/** A request without an Idempotency-Key gets a stream of its own. */
export const newRequestStreamSuffix = () => `r${crypto.randomBytes(12).toString('hex')}`;
/**
 * A key's stream: a digest of the key, so any allowed key fits a stream id. Streams are per mode
 * partition (domain/shared/partitions.ts), so a test event never replays for, or blocks, a live one.
 */
export const keyStreamSuffix = (idempotencyKey: string) => `k${crypto.createHash('sha256').update(idempotencyKey).digest('hex').slice(0, 40)}`;
export const fingerprintOf = (canonical: string) => crypto.createHash('sha256').update(canonical).digest('base64url');
