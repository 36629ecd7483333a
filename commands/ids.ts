import crypto from 'node:crypto';
import { ID_KINDS, type RandomIdKind } from '../domain/shared/ids.ts';

const BASE36 = '0123456789abcdefghijklmnopqrstuvwxyz';

function base36(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of crypto.randomBytes(32)) {
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
  const hex = crypto.randomBytes(12 * n).toString('hex');
  return Array.from({ length: n }, (_, i) => prefix + hex.slice(i * 24, i * 24 + 24));
}

/** A fresh id of each kind commands draw, minted here so deciders only ever receive ids. */
export const newId = Object.fromEntries(
  (Object.keys(ID_KINDS) as (keyof typeof ID_KINDS)[])
    .filter((k) => ID_KINDS[k].from === 'random')
    .map((k) => [k, () => newIds(k as RandomIdKind, 1)[0]!]),
) as Record<RandomIdKind, () => string>;
