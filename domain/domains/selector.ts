/**
 * DKIM selectors of ours: `wms<yyyymm>` of the month the key was made, and `wms<yyyymm>-<n>`
 * (n from 2) for another key made in the same month. A new key gets a new selector, so a
 * rotation can publish the new record while the old one still verifies mail in flight, and the
 * name tells an operator how old a key is.
 */
export const LONGEST_SELECTOR = 'wms000000-99999'.length;

/** The selector for a key made at `now` (ISO instant), given the selectors the domain has used. */
export function nextDkimSelector(now: string, used: readonly string[]): string {
  const base = `wms${now.slice(0, 4)}${now.slice(5, 7)}`;
  if (!/^wms\d{6}$/.test(base)) throw new RangeError(`nextDkimSelector: ${JSON.stringify(now)} is not an ISO instant`);
  const taken = new Set(used);
  if (!taken.has(base)) return base;
  for (let n = 2; n <= 99999; n++) if (!taken.has(`${base}-${n}`)) return `${base}-${n}`;
  throw new RangeError(`nextDkimSelector: every selector of ${base} is used`);
}
