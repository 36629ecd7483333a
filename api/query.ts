import { z, type ZodType } from 'zod';

/** `?flag=true|false|1|0`. */
export const booleanParam = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');

/** A list given either repeated (`?s=a&s=b`) or comma-separated (`?s=a,b`). */
export function listParam<T>(item: ZodType<T, string>, max = 50) {
  return z
    .union([z.string(), z.array(z.string())])
    .transform((v) =>
      (Array.isArray(v) ? v : [v])
        .flatMap((s) => s.split(','))
        .map((s) => s.trim())
        .filter((s) => s !== ''),
    )
    .pipe(z.array(item).max(max));
}
