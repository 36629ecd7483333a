import { z } from 'zod';

/** Code points, not UTF-16 units, as lengths count everywhere in this service. */
export const text = (max: number) =>
  z
    .string()
    .trim()
    .refine((s) => [...s].length <= max, { message: `at most ${max} characters` });
