import type { MailboxImportFormat } from './events.ts';

/** What a file (or an archive's entry) is by its first bytes: a format, an executable, or nothing we read. */
export type Detected = MailboxImportFormat | 'dangerous' | 'unsupported';

/** Fields only mail has: a text file of `Name: value` lines (a calendar, a vCard) is no message without one. */
const MAIL_FIELD = /^(from|date|message-id|received|return-path|subject|delivered-to|mime-version):/im;

/**
 * What a file of an import is, from its first bytes, never its name: an mbox starts with a
 * `From ` line; a message (.eml) with a header field, and has a field only mail has before its
 * first blank line; a zip with a local file header (or the end of an empty one), a tgz with
 * gzip's magic; executables are `dangerous`; anything else is `unsupported`.
 */
export function detectFormat(head: Buffer): Detected {
  if (head.length < 4) return head.length > 0 && head.toString('latin1').startsWith('#!') ? 'dangerous' : 'unsupported';
  const start = head.subarray(0, 4);
  if (start.subarray(0, 2).toString('latin1') === 'MZ' || start.toString('latin1') === '\x7fELF') return 'dangerous';
  const magic = start.readUInt32BE(0);
  if ([0xfeedface, 0xfeedfacf, 0xcefaedfe, 0xcffaedfe, 0xcafebabe].includes(magic)) return 'dangerous';
  if (head.subarray(0, 2).toString('latin1') === '#!') return 'dangerous';
  if (magic === 0x504b0304 || magic === 0x504b0506) return 'zip';
  if (head[0] === 0x1f && head[1] === 0x8b && head[2] === 0x08) return 'tgz';
  const text = head.toString('latin1');
  if (text.startsWith('From ')) return 'mbox';
  // A header field name (RFC 5322: printable ASCII but colon) then a colon, on the first line.
  if (/^[\x21-\x39\x3b-\x7e]{1,76}:[ \t]?[^\r\n]*\r?\n/.test(text)) {
    const blank = text.search(/\r?\n\r?\n/);
    if (MAIL_FIELD.test(blank === -1 ? text : text.slice(0, blank))) return 'eml';
  }
  return 'unsupported';
}

/** Names no entry of an archive may have: out of the archive (`..`), absolute, a drive, a NUL. */
export function unsafeEntryName(name: string): string | null {
  if (name.includes('\0')) return 'a NUL in its name';
  const n = name.replace(/\\/g, '/');
  if (n.startsWith('/')) return 'an absolute path';
  if (/^[a-zA-Z]:/.test(n)) return 'a drive letter';
  if (n.split('/').includes('..')) return 'a path out of the archive (`..`)';
  return null;
}

/**
 * Names of programs that Windows runs when opened: refused inside an archive whatever their bytes
 * (the bytes of ELF, Mach-O, PE and scripts are refused by `detectFormat`). Names a mail file
 * could plausibly have (`.com`, `.js`, `.sh`) are left to the bytes.
 */
export const isExecutableName = (name: string) => /\.(exe|dll|scr|bat|cmd|msi|ps1|vbs|jar|lnk)$/i.test(name);

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
  /** A draft of the mailbox (drafts API), not mail in a thread. */
  | { skip: false; draft: true }
  | {
      skip: false;
      draft: false;
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
 * state from Unread/Opened, else mbox `Status:`, else inbox mail is unread. Draft becomes a draft
 * of the mailbox, unless it is also in Trash or Spam (a discarded draft: drafts have no trash,
 * so it is skipped whatever the options). Chats are not mail: skipped.
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
  if (system.has('draft'))
    return system.has('trash') || system.has('spam') ? { skip: true, reason: 'draft' } : { skip: false, draft: true };
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
  return {
    skip: false,
    draft: false,
    direction: sent ? 'sent' : 'received',
    wanted,
    unread,
    custom: [...new Set(custom)],
  };
}
