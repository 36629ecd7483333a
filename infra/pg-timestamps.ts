import pg from 'pg';

const TIMESTAMPTZ = 1184;
const DOT = 46;
const PLUS = 43;
const ZERO = 48;

/** pg's own parser (postgres-date): every form the fast path below leaves to it, and its tests' reference. */
export const parseAnyForm = pg.types.getTypeParser(TIMESTAMPTZ, 'text') as (text: string) => Date;

/**
 * A timestamptz read in UTC, as PostgreSQL sent it. Every list answers its rows' instants as ISO
 * text, and pg's parse (a regular expression) and `Date#toISOString` cost 1.6 µs a value, 5–8 %
 * of the server's CPU on a GET of 25 suppressions under load (docs/benchmarks.md): this parses
 * the fixed form by hand and answers `toISOString` from the text, 0.4 µs. A date set to another
 * instant since answers as any Date does.
 */
class UtcTimestamp extends Date {
  readonly #text: string;
  readonly #ms: number;

  constructor(ms: number, text: string) {
    super(ms);
    this.#ms = ms;
    this.#text = text;
  }

  override toISOString(): string {
    if (this.getTime() !== this.#ms) return super.toISOString();
    const t = this.#text;
    // `.ffffff` between the seconds and `+00`: its first three digits, padded, are the milliseconds.
    const fraction = t.charCodeAt(19) === DOT ? `${t.slice(20, t.length - 3)}00`.slice(0, 3) : '000';
    return `${t.slice(0, 10)}T${t.slice(11, 19)}.${fraction}Z`;
  }
}

/** The number the decimal digits of `text[from, to)` spell; -1 when one is not a digit. */
function digits(text: string, from: number, to: number): number {
  let n = 0;
  for (let i = from; i < to; i++) {
    const d = text.charCodeAt(i) - ZERO;
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return n;
}

/**
 * `YYYY-MM-DD HH:MM:SS[.f{1,6}]+00`, the form of DateStyle ISO in the UTC zone; anything else
 * (another zone, a year before 1 or past 9999, `infinity`) goes to pg's parser.
 */
export function parseTimestamptz(text: string): Date {
  const n = text.length;
  const utc =
    n >= 22 && text.charCodeAt(n - 3) === PLUS && text.charCodeAt(n - 2) === ZERO && text.charCodeAt(n - 1) === ZERO;
  if (!utc || text[4] !== '-' || text[7] !== '-' || text[10] !== ' ' || text[13] !== ':' || text[16] !== ':')
    return parseAnyForm(text);
  const end = n - 3;
  let ms = 0;
  if (end > 19) {
    const places = Math.min(end, 23) - 20;
    const fraction = text.charCodeAt(19) === DOT && places > 0 ? digits(text, 20, 20 + places) : -1;
    if (fraction < 0 || digits(text, 20, end) < 0) return parseAnyForm(text);
    ms = fraction * 10 ** (3 - places);
  }
  const parts = [0, 5, 8, 11, 14, 17].map((at) => digits(text, at, at === 0 ? 4 : at + 2));
  const [year, month, day, hour, minute, second] = parts as [number, number, number, number, number, number];
  // Date.UTC maps years 0–99 to 1900–1999: such a year is left to pg's parser too.
  if (year < 100 || parts.some((p) => p < 0)) return parseAnyForm(text);
  return new UtcTimestamp(Date.UTC(year, month - 1, day, hour, minute, second, ms), text);
}
