/**
 * The text formats of the export's entries, pure: vCard 4 (RFC 6350), iCalendar (RFC 5545), the
 * `From ` line of an mbox, and entry names made safe for a zip.
 */

/** A TEXT value of vCard or iCalendar: backslash, comma, semicolon and line ends escaped. */
const escapeText = (value: string) =>
  value
    .replace(/\\/g, '\\\\')
    .replace(/,/g, '\\,')
    .replace(/;/g, '\\;')
    .replace(/\r\n|\r|\n/g, '\\n');

/** RFC 6868 parameter value: caret, line end and double quote as `^^`, `^n`, `^'`, quoted. */
const paramValue = (value: string) =>
  `"${value
    .replace(/\^/g, '^^')
    .replace(/\r\n|\r|\n/g, '^n')
    .replace(/"/g, "^'")}"`;

/** A content line folded at 75 octets, never inside a UTF-8 character; CRLF after each part. */
export function foldLine(line: string): string {
  const bytes = Buffer.from(line, 'utf8');
  if (bytes.length <= 75) return `${line}\r\n`;
  const parts: string[] = [];
  let start = 0;
  let limit = 75;
  while (start < bytes.length) {
    let end = Math.min(start + limit, bytes.length);
    // A continuation byte (10xxxxxx) would split a character: step back to its first byte.
    while (end < bytes.length && (bytes[end]! & 0xc0) === 0x80) end--;
    parts.push(bytes.subarray(start, end).toString('utf8'));
    start = end;
    limit = 74;
  }
  return `${parts.join('\r\n ')}\r\n`;
}

export interface VCardContact {
  id: string;
  email: string;
  name: string | null;
  notes: string | null;
  attributes: Record<string, string>;
  updatedAt: string;
}

/** One contact as a vCard 4.0; its attributes as `X-ATTRIBUTE` properties named by a `KEY` parameter. */
export function vCard(c: VCardContact): string {
  const lines = [
    'BEGIN:VCARD',
    'VERSION:4.0',
    `UID:${escapeText(c.id)}`,
    `FN:${escapeText(c.name ?? c.email)}`,
    `EMAIL:${escapeText(c.email)}`,
    ...(c.notes ? [`NOTE:${escapeText(c.notes)}`] : []),
    ...Object.entries(c.attributes).map(([key, value]) => `X-ATTRIBUTE;KEY=${paramValue(key)}:${escapeText(value)}`),
    `REV:${c.updatedAt.replace(/[-:]/g, '').replace(/\.\d+/, '')}`,
    'END:VCARD',
  ];
  return lines.map(foldLine).join('');
}

/** The calendar: the service keeps no events, so an empty calendar, valid for every reader. */
export function emptyCalendar(): string {
  return [
    'BEGIN:VCALENDAR',
    'VERSION:2.0',
    'PRODID:-//Workspace Mail Service//Export//EN',
    'CALSCALE:GREGORIAN',
    'END:VCALENDAR',
  ]
    .map(foldLine)
    .join('');
}

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** The `From ` line that opens a message in an mbox: the envelope sender and the time, asctime style (UTC). */
export function mboxFromLine(sender: string | null, at: Date): string {
  const who = sender && /^[^\s<>]+$/.test(sender) ? sender : 'MAILER-DAEMON';
  const pad = (n: number) => String(n).padStart(2, '0');
  const day = String(at.getUTCDate()).padStart(2, ' ');
  const time = `${pad(at.getUTCHours())}:${pad(at.getUTCMinutes())}:${pad(at.getUTCSeconds())}`;
  return `From ${who} ${DAYS[at.getUTCDay()]} ${MONTHS[at.getUTCMonth()]} ${day} ${time} ${at.getUTCFullYear()}\n`;
}

/**
 * A name usable as one path segment of a zip entry on every system: letters, digits and
 * `. _ @ + -` kept, anything else `_`, never `.` or `..`, at most 100 characters.
 */
export function entryName(name: string): string {
  const safe = name.replace(/[^\p{L}\p{N}._@+-]/gu, '_').slice(0, 100);
  return safe === '' || /^\.+$/.test(safe) ? '_' : safe;
}

/** The time of an mbox `From ` line as `mboxFromLine` writes it (asctime, UTC), ISO 8601; null when it holds none. */
export function mboxFromTime(line: string): string | null {
  const m = /(\w{3}) +(\d{1,2}) (\d{2}):(\d{2}):(\d{2}) (\d{4})\s*$/.exec(line);
  if (!m) return null;
  const month = MONTHS.indexOf(m[1]!);
  if (month === -1) return null;
  const at = Date.UTC(Number(m[6]), month, Number(m[2]), Number(m[3]), Number(m[4]), Number(m[5]));
  return Number.isNaN(at) ? null : new Date(at).toISOString();
}

/** A contact read back from a vCard of `vCard` (its id and revision are the old workspace's, not kept). */
export interface ParsedVCard {
  email: string;
  name: string | null;
  notes: string | null;
  attributes: Record<string, string>;
}

const unescapeText = (value: string) =>
  value.replace(/\\([\\,;nN])/g, (_, c: string) => (c === 'n' || c === 'N' ? '\n' : c));

const unparam = (value: string) =>
  value.replace(/^"(.*)"$/s, '$1').replace(/\^(\^|n|')/g, (_, c: string) => (c === 'n' ? '\n' : c === "'" ? '"' : '^'));

/** One unfolded content line: its upper-cased name, its parameters, its value (the first `:` outside quotes splits). */
function contentLine(line: string): { name: string; params: Map<string, string>; value: string } | null {
  let quoted = false;
  let colon = -1;
  for (let i = 0; i < line.length; i++) {
    if (line[i] === '"') quoted = !quoted;
    else if (line[i] === ':' && !quoted) {
      colon = i;
      break;
    }
  }
  if (colon === -1) return null;
  const [name, ...rest] = line.slice(0, colon).match(/(?:[^;"]|"[^"]*")+/g) ?? [];
  const params = new Map<string, string>();
  for (const p of rest) {
    const eq = p.indexOf('=');
    if (eq > 0) params.set(p.slice(0, eq).toUpperCase(), unparam(p.slice(eq + 1)));
  }
  return { name: (name ?? '').toUpperCase(), params, value: line.slice(colon + 1) };
}

/**
 * The contacts of a vCard stream (vCard 4 as `vCard` writes it), one card at a time as the bytes
 * arrive: lines unfolded, TEXT and RFC 6868 parameter quoting undone. `FN` equal to the address is
 * no name (`vCard` writes the address when there is none). A card without `EMAIL` is passed over.
 */
export async function* parseVCards(source: AsyncIterable<Buffer>): AsyncGenerator<ParsedVCard> {
  let carry = '';
  let logical: string | null = null;
  let card: { fn: string | null; contact: ParsedVCard } | null = null;
  const decoder = new TextDecoder('utf-8');
  function* take(line: string): Generator<ParsedVCard> {
    const parsed = contentLine(line);
    if (!parsed) return;
    const { name, params, value } = parsed;
    if (name === 'BEGIN' && value.toUpperCase() === 'VCARD')
      card = { fn: null, contact: { email: '', name: null, notes: null, attributes: {} } };
    else if (!card) return;
    else if (name === 'END') {
      const { fn, contact } = card as { fn: string | null; contact: ParsedVCard };
      card = null;
      if (contact.email === '') return;
      yield { ...contact, name: fn === null || fn === contact.email ? null : fn };
    } else if (name === 'FN') card.fn = unescapeText(value);
    else if (name === 'EMAIL') card.contact.email = unescapeText(value);
    else if (name === 'NOTE') card.contact.notes = unescapeText(value);
    else if (name === 'X-ATTRIBUTE' && params.has('KEY'))
      card.contact.attributes[params.get('KEY')!] = unescapeText(value);
  }
  const lines = function* (text: string, last: boolean): Generator<ParsedVCard> {
    const parts = (carry + text).split(/\r?\n/);
    carry = last ? '' : parts.pop()!;
    for (const part of parts) {
      if (part.startsWith(' ') || part.startsWith('\t')) {
        logical = (logical ?? '') + part.slice(1);
        continue;
      }
      if (logical !== null) yield* take(logical);
      logical = part === '' ? null : part;
    }
    if (last && logical !== null) {
      yield* take(logical);
      logical = null;
    }
  };
  for await (const chunk of source) yield* lines(decoder.decode(chunk, { stream: true }), false);
  yield* lines(decoder.decode(), true);
}
