import { z } from 'zod';
import { canonicalTimeZone } from '../domain/shared/time-zones.ts';

/** Request schemas shared by several resources. */
export const domainName = z
  .string()
  .trim()
  .toLowerCase()
  .regex(/^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/, 'must be a domain name');

/** Narrowing lists as keys and webhook endpoints take them; null or absent means the whole workspace. */
export const addressAllowlist = z.array(z.email().max(320)).max(1000).nullable().optional();
export const domainAllowlist = z.array(domainName).max(1000).nullable().optional();

/**
 * Every date-time a request takes: ISO 8601 with a zone, at a UTC year from 1 to 9999. PostgreSQL
 * has no year 0, and JavaScript writes years past 9999 or before 1 in a six-digit form that
 * PostgreSQL cannot read (`2023-…-05:00` near the end of 9999 lands in year 10000 UTC).
 */
export const dateTime = z.iso.datetime({ offset: true }).refine(
  (value) => {
    const year = new Date(value).getUTCFullYear();
    return year >= 1 && year <= 9999;
  },
  { message: 'must fall between the years 0001 and 9999 in UTC' },
);

/** Shared with what validates outside requests (a task's tool arguments). */
export { text } from '../domain/shared/text.ts';

/**
 * An IANA time zone name (`Europe/Berlin`) or `UTC`, answered under the name the runtime's time
 * zone database lists (domain/shared/time-zones.ts).
 */
export const timeZone = z
  .string()
  .max(64)
  .transform((value, ctx) => {
    const zone = canonicalTimeZone(value);
    if (zone === null) {
      ctx.addIssue({ code: 'custom', message: 'must be an IANA time zone name, such as Europe/Berlin, or UTC' });
      return z.NEVER;
    }
    return zone;
  })
  .describe('An IANA time zone name, such as `Europe/Berlin`, or `UTC`.');

/** A mailbox in a query: an address, or `*@<domain>` for a catch-all; compared lower-cased. */
export const mailboxParam = z
  .string()
  .max(320)
  .transform((s) => s.trim().toLowerCase())
  .describe('A mailbox: an address, or `*@<domain>` for a catch-all.');
