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
