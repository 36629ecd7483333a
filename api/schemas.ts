import { z } from 'zod';

/** Request schemas shared by several resources. */
export const domainName = z
  .string()
  .trim()
  .toLowerCase()
  .regex(/^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/, 'must be a domain name');

/** Narrowing lists as keys and webhook endpoints take them; null or absent means the whole workspace. */
export const addressAllowlist = z.array(z.email().max(320)).max(1000).nullable().optional();
export const domainAllowlist = z.array(domainName).max(1000).nullable().optional();
