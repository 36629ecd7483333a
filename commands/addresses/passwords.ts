import crypto from 'node:crypto';
import { promisify } from 'node:util';

const scrypt = promisify(crypto.scrypt) as (
  password: string,
  salt: Buffer,
  keylen: number,
  options: crypto.ScryptOptions,
) => Promise<Buffer>;

/**
 * scrypt from node:crypto (OpenSSL's): no native add-on to build, and the parameters travel with
 * each hash, so they can grow later without invalidating the ones stored. N = 2^14, r = 8 is 16 MiB
 * and about 50 ms a check here; the passwords are random (below), so the slow hash guards a leaked
 * table rather than weak choices.
 */
const PARAMS = { N: 2 ** 14, r: 8, p: 1 };
const KEY_LENGTH = 32;
const LETTERS = 'abcdefghijklmnopqrstuvwxyz';

/**
 * A new app password: 16 lower-case letters (75 bits), shown as four groups of four, which mail
 * clients take typed with or without the spaces.
 */
export function newAppPassword(): string {
  let out = '';
  while (out.length < 16) {
    for (const byte of crypto.randomBytes(32)) {
      // 234 = 9 * 26: rejecting the top bytes keeps every letter equally likely.
      if (byte < 234 && out.length < 16) out += LETTERS[byte % 26];
    }
  }
  return out.match(/.{4}/g)!.join(' ');
}

/** Spaces are only for reading it out. */
const normalised = (password: string) => password.replace(/\s+/g, '').toLowerCase();

/** `scrypt$N$r$p$<salt>$<hash>`, base64url. */
export async function hashAppPassword(password: string): Promise<string> {
  const salt = crypto.randomBytes(16);
  const hash = await scrypt(normalised(password), salt, KEY_LENGTH, PARAMS);
  return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64url'), hash.toString('base64url')].join('$');
}

/** Whether `password` is the one `stored` was made from; a malformed `stored` is never a match. */
export async function verifyAppPassword(password: string, stored: string): Promise<boolean> {
  const [kind, n, r, p, salt, hash] = stored.split('$');
  if (kind !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const N = Number(n);
  const options = { N, r: Number(r), p: Number(p), maxmem: 256 * N * Number(r) };
  const actual = await scrypt(normalised(password), Buffer.from(salt, 'base64url'), expected.length, options);
  return crypto.timingSafeEqual(actual, expected);
}
