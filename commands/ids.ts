import crypto from 'node:crypto';
import { ID_KINDS, type RandomIdKind } from '../domain/shared/ids.ts';

const BASE36 = '0123456789abcdefghijklmnopqrstuvwxyz';

/**
 * Randomness drawn from the CSPRNG 4 KiB at a time and handed out once each, as crypto.randomUUID
 * does: `crypto.randomBytes(12)` per id cost 2.6 µs, a slice of this 0.14 (every request mints a
 * request id, an import every row's ids).
 */
const POOL = Buffer.alloc(4096);
let drawn = POOL.length;

/** `n` fresh random bytes, a copy: never handed out twice. */
function randomBytes(n: number): Buffer {
  if (n > POOL.length / 4) return crypto.randomBytes(n);
  if (drawn + n > POOL.length) {
    crypto.randomFillSync(POOL);
    drawn = 0;
  }
  const bytes = Buffer.from(POOL.subarray(drawn, drawn + n));
  drawn += n;
  return bytes;
}

function base36(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(32)) {
      // 252 = 7 * 36: rejecting the top bytes keeps every character equally likely.
      if (byte < 252 && out.length < length) out += BASE36[byte % 36];
    }
  }
  return out;
}

/** `n` fresh ids of a kind (domain/shared/ids.ts), hex ones from one draw of randomness. */
export function newIds(kind: RandomIdKind, n: number): string[] {
  const { prefix, body } = ID_KINDS[kind];
  if (body === 'uuid') return Array.from({ length: n }, () => prefix + crypto.randomUUID());
  if (body === 'base36x24') return Array.from({ length: n }, () => prefix + base36(24));
  const hex = randomBytes(12 * n).toString('hex');
  return Array.from({ length: n }, (_, i) => prefix + hex.slice(i * 24, i * 24 + 24));
}

/** A fresh id of each kind commands draw, minted here so deciders only ever receive ids. */
export const newId = Object.fromEntries(
  (Object.keys(ID_KINDS) as (keyof typeof ID_KINDS)[])
    .filter((k) => ID_KINDS[k].from === 'random')
    .map((k) => [k, () => newIds(k as RandomIdKind, 1)[0]!]),
) as Record<RandomIdKind, () => string>;
