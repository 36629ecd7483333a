/** The spec's limit: 10 inboxes per 10 minutes per network. */
export const TEMP_INBOX_CREATES_MAX = 10;
export const TEMP_INBOX_WINDOW_MS = 10 * 60 * 1000;
/** How long an inbox lives (docs/decisions/temp-mail.md). */
export const TEMP_INBOX_LIFETIME_MS = 60 * 60 * 1000;
/** Messages one inbox keeps; more are refused at DATA, so a stream stays small. */
export const TEMP_INBOX_MESSAGES_MAX = 100;

/**
 * The network a client address counts under: IPv4 by /24, IPv6 by /56 (a household's or a small
 * site's usual delegation), an IPv4-mapped IPv6 address as its IPv4. Null for what is no address.
 */
export function networkOf(ip: string): string | null {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  const v4 = mapped ? mapped[1]! : ip;
  if (/^\d+\.\d+\.\d+\.\d+$/.test(v4)) {
    const octets = v4.split('.').map(Number);
    if (octets.some((o) => o > 255)) return null;
    return `${octets.slice(0, 3).join('.')}.0/24`;
  }
  const groups = ipv6Groups(ip.replace(/%.*$/, ''));
  if (groups === null) return null;
  // 56 bits: three groups and the high byte of the fourth.
  const fourth = (groups[3]! & 0xff00).toString(16);
  return `${groups
    .slice(0, 3)
    .map((g) => g.toString(16))
    .join(':')}:${fourth}::/56`;
}

function ipv6Groups(ip: string): number[] | null {
  if (!/^[0-9a-f:.]+$/i.test(ip)) return null;
  const halves = ip.split('::');
  if (halves.length > 2) return null;
  const part = (s: string) => (s === '' ? [] : s.split(':'));
  const head = part(halves[0]!);
  const tail = halves.length === 2 ? part(halves[1]!) : [];
  const words = [...head, ...tail];
  if (words.some((w) => !/^[0-9a-f]{1,4}$/i.test(w))) return null;
  const missing = 8 - words.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return null;
  return [...head, ...Array(halves.length === 2 ? missing : 0).fill('0'), ...tail].map((w) => Number.parseInt(w, 16));
}
