import type { MailboxImportFormat } from './events.ts';

/**
 * What a file of an import is, from its first bytes, never its name: an mbox starts with a
 * `From ` line; a message (.eml) with a header field; executables are `dangerous`; anything else
 * (archives included, which this version does not open) is `unsupported`.
 */
export function detectFormat(head: Buffer): MailboxImportFormat | 'dangerous' | 'unsupported' {
  if (head.length === 0) return 'unsupported';
  const start = head.subarray(0, 4);
  if (start.subarray(0, 2).toString('latin1') === 'MZ' || start.toString('latin1') === '\x7fELF') return 'dangerous';
  const magic = start.readUInt32BE(0);
  if ([0xfeedface, 0xfeedfacf, 0xcefaedfe, 0xcffaedfe, 0xcafebabe].includes(magic)) return 'dangerous';
  if (head.subarray(0, 2).toString('latin1') === '#!') return 'dangerous';
  const text = head.toString('latin1');
  if (text.startsWith('From ')) return 'mbox';
  // A header field name (RFC 5322: printable ASCII but colon) then a colon, on the first line.
  if (/^[\x21-\x39\x3b-\x7e]{1,76}:[ \t]?[^\r\n]*\r?\n/.test(text)) return 'eml';
  return 'unsupported';
}

/** The takeout's own label names, mapped to ours; the rest become custom labels. */
const SYSTEM = new Map<string, string>([
  ['inbox', 'inbox'],
  ['spam', 'spam'],
  ['trash', 'trash'],
  ['sent', 'sent'],
  ['draft', 'draft'],
  ['drafts', 'draft'],
  ['unread', 'unread'],
  ['opened', 'opened'],
  ['chat', 'chat'],
]);
/** Labels the takeout sets on its own that carry no folder of ours. */
const IGNORED = /^(important|starred|archived|category .*|imap_.*|\[imap\].*)$/i;

/** `X-Gmail-Labels`' value: comma-separated, a name with a comma in double quotes. */
export function splitLabels(value: string): string[] {
  const names: string[] = [];
  for (const m of value.matchAll(/\s*(?:"((?:[^"\\]|\\.)*)"|([^,]*))\s*(?:,|$)/g)) {
    const name = (m[1] ?? m[2] ?? '').replace(/\\(.)/g, '$1').trim();
    if (name) names.push(name);
    if (m.index + m[0].length >= value.length) break;
  }
  return names;
}

export interface ImportHeaders {
  /** `X-Gmail-Labels`, split; null when the message has none (not a takeout). */
  labels: string[] | null;
  /** The message came from the mailbox's own address. */
  fromSelf: boolean;
  /** mbox `Status:` (`R` read, `O` old). */
  status: string | null;
}

export type Placement =
  | { skip: true; reason: 'spam' | 'trash' | 'draft' | 'chat' }
  | {
      skip: false;
      direction: 'received' | 'sent';
      wanted: 'inbox' | 'archive' | 'spam' | 'trash';
      unread: boolean;
      /** Custom label names to put on the thread. */
      custom: string[];
    };

/**
 * Where an imported message goes, by its takeout labels and the import's options: Trash and Spam
 * only with `includeTrash` / `includeSpam`; Sent (or mail from the address itself) as sent mail;
 * Inbox in the inbox, or under archive when `keepInbox` is false; anything else archived. Read
 * state from Unread/Opened, else mbox `Status:`, else inbox mail is unread. Drafts and chats are
 * not mail to file: skipped.
 */
export function placeMessage(
  headers: ImportHeaders,
  options: { keepInbox: boolean; includeSpam: boolean; includeTrash: boolean },
): Placement {
  const system = new Set<string>();
  const custom: string[] = [];
  for (const name of headers.labels ?? []) {
    const mapped = SYSTEM.get(name.toLowerCase());
    if (mapped) system.add(mapped);
    else if (!IGNORED.test(name)) custom.push(name);
  }
  if (system.has('chat')) return { skip: true, reason: 'chat' };
  if (system.has('draft')) return { skip: true, reason: 'draft' };
  if (system.has('trash') && !options.includeTrash) return { skip: true, reason: 'trash' };
  if (system.has('spam') && !options.includeSpam) return { skip: true, reason: 'spam' };
  const sent = system.has('sent') || (headers.labels === null && headers.fromSelf);
  const inInbox = headers.labels === null ? !sent : system.has('inbox');
  const wanted = system.has('trash')
    ? 'trash'
    : system.has('spam')
      ? 'spam'
      : inInbox && options.keepInbox
        ? 'inbox'
        : 'archive';
  const unread = sent
    ? false
    : system.has('unread')
      ? true
      : system.has('opened')
        ? false
        : headers.status !== null
          ? !headers.status.includes('R')
          : wanted === 'inbox';
  return { skip: false, direction: sent ? 'sent' : 'received', wanted, unread, custom: [...new Set(custom)] };
}
