import { randomBytes } from 'node:crypto';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { createTransport } from 'nodemailer';
import { checkedMessage, type MailSender, type OutboundMessage } from './port.ts';

export interface FileOutboxOptions {
  /** Created (with parents) on the first send if missing. The embedded default is `<DATA_DIR>/outbox`. */
  dir: string;
  /** Stamps the file name; tests pin it. */
  now?: () => Date;
}

/**
 * The embedded default's mail sender: every message becomes one RFC 5322 `.eml` file (CRLF line
 * ends) in `dir`, exactly the bytes an SMTP server would have been handed, built by nodemailer's
 * stream transport (the same composer the SMTP adapter uses).
 *
 * Files are named `<ISO 8601 basic UTC timestamp>-<Message-ID, filename-safe>.eml`, e.g.
 * `20261122T041012.786Z-0f6c..._example.com.eml`, so a directory listing sorts by time. Each is
 * written to a dot-prefixed temporary name, flushed, then renamed, so a reader that takes `*.eml`
 * never sees half a message. Nothing here deletes or rotates files.
 */
export class FileOutbox implements MailSender {
  readonly dir: string;
  readonly #now: () => Date;
  readonly #transport = createTransport({
    streamTransport: true,
    buffer: true,
    newline: 'windows',
    // Messages carry strings only; never let content point nodemailer at a file or a URL.
    disableFileAccess: true,
    disableUrlAccess: true,
  });
  #dirReady: Promise<unknown> | undefined;
  readonly #inFlight = new Set<Promise<unknown>>();
  #closed = false;

  constructor(options: FileOutboxOptions) {
    this.dir = path.resolve(options.dir);
    this.#now = options.now ?? (() => new Date());
  }

  async send(message: OutboundMessage): Promise<{ messageId: string }> {
    if (this.#closed) throw new Error('mail: the file outbox is closed');
    const work = this.#write(checkedMessage(message));
    this.#inFlight.add(work);
    try {
      return await work;
    } finally {
      this.#inFlight.delete(work);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.allSettled([...this.#inFlight]);
    this.#transport.close();
  }

  async #write(mail: ReturnType<typeof checkedMessage>): Promise<{ messageId: string }> {
    const info = await this.#transport.sendMail(mail);
    if (!Buffer.isBuffer(info.message)) throw new Error('mail: the stream transport did not buffer the message');
    // A failed mkdir is not cached: the next send tries again.
    this.#dirReady ??= mkdir(this.dir, { recursive: true, mode: 0o700 }).catch((error: unknown) => {
      this.#dirReady = undefined;
      throw error;
    });
    await this.#dirReady;

    const name = `${basicIsoTimestamp(this.#now())}-${fileSafe(info.messageId)}.eml`;
    const temporary = path.join(this.dir, `.${name}.${randomBytes(6).toString('hex')}.tmp`);
    try {
      const file = await open(temporary, 'wx', 0o600);
      try {
        await file.writeFile(info.message);
        await file.sync();
      } finally {
        await file.close();
      }
      await rename(temporary, path.join(this.dir, name));
    } catch (error) {
      await rm(temporary, { force: true });
      throw error;
    }
    return { messageId: info.messageId };
  }
}

/** `2026-11-22T04:10:12.786Z` as `20261122T041012.786Z`: ISO 8601 basic format, no colons. */
function basicIsoTimestamp(date: Date): string {
  return date.toISOString().replace(/[-:]/g, '');
}

/** `<uuid@example.com>` as `uuid_example.com`; bounded so the name stays well under 255 bytes. */
function fileSafe(messageId: string): string {
  const safe = messageId
    .replace(/^<|>$/g, '')
    .replace(/[^A-Za-z0-9._-]/g, '_')
    .replace(/^\.+/, '_')
    .slice(0, 160);
  return safe === '' ? 'message' : safe;
}
