/** What a mailbox's time zone is until someone sets one (docs/decisions/addresses.md). */
export const DEFAULT_TIME_ZONE = 'UTC';

// The runtime's list leaves UTC out (it is not a region), though every engine knows it.
const known = new Set([DEFAULT_TIME_ZONE, ...Intl.supportedValuesOf('timeZone')]);

/**
 * An IANA time zone name as the runtime's time zone database lists it, or null. Another name for
 * a listed zone (another case, or a link such as `Asia/Kolkata`, which Node 20's ICU lists as
 * `Asia/Calcutta`) answers the listed name: what the runtime calls canonical changes between ICU
 * versions, and refusing a zone's current IANA name would be wrong.
 */
export function canonicalTimeZone(name: string): string | null {
  if (known.has(name)) return name;
  let resolved: string;
  try {
    resolved = new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    return null;
  }
  return known.has(resolved) ? resolved : null;
}
