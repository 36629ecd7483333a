import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { ZipFile } from 'yazl';

export interface ManifestEntry {
  path: string;
  bytes: number;
  sha256: string;
}

/**
 * The export's zip as a stream (yazl): entries are declared up front and each one's content is
 * asked for only when its turn comes, so one entry is read at a time and memory stays flat
 * whatever the number or size of entries. Each entry's bytes are hashed as they pass, for the
 * manifest. A content that fails, or `abort`, ends `output` with the error: whoever stores it
 * stores nothing.
 */
export class ExportZip {
  private readonly zip = new ZipFile();
  readonly entries: ManifestEntry[] = [];

  constructor(private readonly mtime: Date) {
    // yazl reports a stream's trouble on the ZipFile itself: unheard, it would end the process.
    this.zip.on('error', (error: Error) => this.abort(error));
    // An abort while nobody reads `output` (its reader gave up on an earlier error, or has not
    // started) would be an uncaught error; a reader still learns of it (`errored` keeps it).
    this.output.on('error', () => {});
  }

  get output(): Readable {
    return this.zip.outputStream as Readable;
  }

  add(path: string, content: () => AsyncIterable<Buffer | string>): void {
    this.zip.addReadStreamLazy(path, { mtime: this.mtime }, (ready) => {
      const entry = Readable.from(this.hashed(path, content));
      // Closing the generator when the zip is torn down can still fail; yazl pipes without listening.
      entry.on('error', (error) => this.abort(error));
      ready(null, entry);
    });
  }

  end(): void {
    this.zip.end();
  }

  abort(error: Error): void {
    this.output.destroy(error);
  }

  /**
   * The content, hashed. A failure is handed to the output, and the entry's stream just ends: yazl
   * pipes it without listening for errors, so an error there would be nobody's.
   */
  private async *hashed(path: string, content: () => AsyncIterable<Buffer | string>): AsyncGenerator<Buffer> {
    const hash = createHash('sha256');
    let bytes = 0;
    try {
      for await (const part of content()) {
        const buffer = typeof part === 'string' ? Buffer.from(part) : part;
        if (buffer.length === 0) continue;
        hash.update(buffer);
        bytes += buffer.length;
        yield buffer;
      }
    } catch (error) {
      this.abort(error instanceof Error ? error : new Error(String(error)));
      return;
    }
    this.entries.push({ path, bytes, sha256: hash.digest('hex') });
  }
}

const FROM = Buffer.from('From ');

/** Does the line (without its end) read `From `, after any number of `>`? Then mboxrd quotes it with one more. */
function quoted(line: Buffer): boolean {
  let at = 0;
  while (at < line.length && line[at] === 0x3e) at++;
  return line.length - at >= FROM.length && line.compare(FROM, 0, FROM.length, at, at + FROM.length) === 0;
}

/**
 * One message of an mbox (mboxrd): the `From ` line, the message's lines with LF ends and
 * `From ` lines quoted, then a blank line. Read as it streams, a line at a time.
 */
export async function* mboxMessage(fromLine: string, raw: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  yield Buffer.from(fromLine);
  const lf = Buffer.from('\n');
  const gt = Buffer.from('>');
  const line = (l: Buffer): Buffer[] => {
    const body = l.length > 0 && l[l.length - 1] === 0x0d ? l.subarray(0, l.length - 1) : l;
    return quoted(body) ? [gt, body, lf] : [body, lf];
  };
  let carry: Buffer = Buffer.alloc(0);
  for await (const chunk of raw) {
    const data = carry.length > 0 ? Buffer.concat([carry, chunk]) : chunk;
    const out: Buffer[] = [];
    let start = 0;
    for (let end = data.indexOf(0x0a, start); end !== -1; end = data.indexOf(0x0a, start)) {
      out.push(...line(data.subarray(start, end)));
      start = end + 1;
    }
    carry = Buffer.from(data.subarray(start));
    if (out.length > 0) yield Buffer.concat(out);
  }
  if (carry.length > 0) yield Buffer.concat(line(carry));
  yield lf;
}
