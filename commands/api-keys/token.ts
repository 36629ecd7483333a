import crypto from 'node:crypto';
import { newId } from '../ids.ts';

const TOKEN = /^wms_(live|test)_([0-9a-z]{24})_([A-Za-z0-9_-]{43})$/;

/**
 * `wms_<mode>_<24-character key id>_<43 base64url characters>`. The id locates the key; the
 * secret (32 random bytes) is checked against its SHA-256. A fast hash is right here: the secret
 * has 256 bits of entropy, so there is nothing for a slow hash to protect.
 */
export function mintToken(
  mode: 'live' | 'test',
  keyId = newId.apiKey(),
): { keyId: string; token: string; secretHash: string } {
  const secret = crypto.randomBytes(32).toString('base64url');
  return { keyId, token: `wms_${mode}_${keyId}_${secret}`, secretHash: hashSecret(secret) };
}

export function parseToken(token: string): { mode: 'live' | 'test'; keyId: string; secret: string } | null {
  const m = TOKEN.exec(token);
  return m ? { mode: m[1] as 'live' | 'test', keyId: m[2]!, secret: m[3]! } : null;
}

export function hashSecret(secret: string): string {
  return crypto.createHash('sha256').update(secret).digest('hex');
}
