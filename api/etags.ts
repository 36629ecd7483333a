/**
 * ETags and If-Match, the one format for every resource that takes them: the numbers a write is
 * conditional on (a stream revision, and for templates how often they were renamed), joined by
 * dots in quotes: `"7"`, `"7.1"`. Commands take the numbers as data; the header is read here.
 */
export const formatETag = (...parts: number[]) => `"${parts.join('.')}"`;

/** A number no state has: what a tag this service never handed out stands for, so the write is refused as stale. */
const NEVER = -2;

/**
 * The numbers of the ETag an If-Match names (`arity` of them), or null when the header is absent
 * or `*`: write unconditionally. A weak tag (`W/"7"`) is read as the strong one.
 */
export function ifMatchOf(headers: Record<string, unknown>, arity: number): number[] | null {
  const header = headers['if-match'];
  if (header === undefined) return null;
  const value = String(header).trim();
  if (value === '*') return null;
  const m = /^(?:W\/)?"(\d{1,9}(?:\.\d{1,9})*)"$/.exec(value);
  const parts = m ? m[1]!.split('.').map(Number) : [];
  return parts.length === arity ? parts : Array<number>(arity).fill(NEVER);
}

/** The documented If-Match header of a conditional write. */
export const ifMatchHeader = (what: string) => ({
  'if-match': `An ETag from a read of the ${what}; when it no longer matches, 409 \`version_conflict\` and nothing changes.`,
});
