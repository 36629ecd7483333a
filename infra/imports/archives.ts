import { pipeline as pipe, type Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { constants, createGunzip, gunzipSync } from 'node:zlib';
import tar from 'tar-stream';
import yauzl from 'yauzl';
import { detectFormat, isExecutableName, unsafeEntryName } from '../../domain/mailbox-imports/formats.ts';
import {
  type ArchiveFile,
  type ArchiveLimits,
  type ArchiveMember,
  ArchiveRefused,
  type ImportArchives,
  type ImportStorage,
} from './port.ts';

/** Enough of an entry to tell what it is (detectFormat). */
const HEAD = 4096;

export const DEFAULT_ARCHIVE_LIMITS: ArchiveLimits = {
  entriesMax: 100_000,
  bytesMax: 200_000_000_000,
  ratioMax: 100,
  ratioFloorBytes: 16 * 1024 * 1024,
};

const dangerous = (message: string) => new ArchiveRefused('dangerous', message);
const unsupported = (message: string) => new ArchiveRefused('unsupported', message);

/** Lexicographic order of member paths, a prefix first. */
function compare(a: number[], b: number[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}
/** An entry at `path` (a file, or an archive holding more) lies wholly before the member `from`. */
const before = (path: number[], from: number[]) => compare(path, from.slice(0, path.length)) < 0;

/** What one archive (an inner one included) may still unpack: entries and bytes, across levels. */
class Budget {
  private entries = 0;
  private unpacked = 0;
  readonly max: number;

  constructor(
    private readonly limits: ArchiveLimits,
    uploadBytes: number,
  ) {
    this.max = Math.min(limits.bytesMax, Math.max(limits.ratioFloorBytes, limits.ratioMax * uploadBytes));
  }

  entry(): void {
    if (++this.entries > this.limits.entriesMax)
      throw dangerous(`The archive holds more than ${this.limits.entriesMax} entries.`);
  }

  bytes(n: number): void {
    this.unpacked += n;
    if (this.unpacked > this.max)
      throw dangerous(
        `The archive unpacks past ${this.max} bytes (at most ${this.limits.ratioMax} times its size, and ${this.limits.bytesMax} bytes).`,
      );
  }

  /** A zip entry's declared sizes: its own ratio (a bomb in one entry of a large archive). */
  declared(name: string, compressed: number, uncompressed: number): void {
    if (uncompressed > this.limits.ratioFloorBytes && uncompressed > this.limits.ratioMax * Math.max(1, compressed))
      throw dangerous(
        `${JSON.stringify(name)} unpacks ${uncompressed} bytes out of ${compressed}: past ${this.limits.ratioMax} times.`,
      );
  }

  /** Counts bytes as they unpack. */
  async *meter(source: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
    for await (const data of source) {
      this.bytes(data.length);
      yield data;
    }
  }
}

/** yauzl reads the ranges it wants through this: from the upload's parts, or a spool. */
class RangeReader extends yauzl.RandomAccessReader {
  constructor(private readonly range: (start: number, end: number) => Readable) {
    super();
  }

  override _readStreamForRange(start: number, end: number): Readable {
    return this.range(start, end);
  }
}

function openZip(range: (start: number, end: number) => Readable, size: number): Promise<yauzl.ZipFile> {
  return new Promise((resolve, reject) =>
    yauzl.fromRandomAccessReader(
      new RangeReader(range),
      size,
      // validateEntrySizes: an entry unpacking to more (or less) than its directory says fails as it streams.
      { lazyEntries: true, autoClose: false, validateEntrySizes: true, decodeStrings: true },
      (error, zip) => (error ? reject(refusal(error)) : resolve(zip)),
    ),
  );
}

/** yauzl's refusals of names are ours too; anything else it says is an unreadable zip. */
function refusal(error: Error): ArchiveRefused {
  if (error instanceof ArchiveRefused) return error;
  if (/absolute path|invalid relative path|invalid characters in fileName/.test(error.message))
    return dangerous(`An entry's name leaves the archive: ${error.message}.`);
  if (/too many bytes in the stream|too few bytes in the stream/.test(error.message))
    return dangerous(`An entry unpacks to another size than the archive's directory says: ${error.message}.`);
  return unsupported(`Not a readable zip: ${error.message}.`);
}

async function* zipEntries(zip: yauzl.ZipFile): AsyncGenerator<yauzl.Entry> {
  for (;;) {
    const entry = await new Promise<yauzl.Entry | null>((resolve, reject) => {
      const done = () => {
        zip.off('entry', onEntry);
        zip.off('end', onEnd);
        zip.off('error', onError);
      };
      const onEntry = (e: yauzl.Entry) => {
        done();
        resolve(e);
      };
      const onEnd = () => {
        done();
        resolve(null);
      };
      const onError = (e: Error) => {
        done();
        reject(refusal(e));
      };
      zip.on('entry', onEntry).on('end', onEnd).on('error', onError);
      zip.readEntry();
    });
    if (!entry) return;
    yield entry;
  }
}

const openEntry = (zip: yauzl.ZipFile, entry: yauzl.Entry) =>
  new Promise<Readable>((resolve, reject) =>
    zip.openReadStream(entry, (error, stream) => (error ? reject(refusal(error)) : resolve(stream))),
  );

const S_IFMT = 0o170000;
const S_IFREG = 0o100000;
const S_IFDIR = 0o040000;
const S_IFLNK = 0o120000;

/** A zip entry's own refusals, by what the directory shows: its name, its kind, encryption. */
function checkZipEntry(entry: yauzl.Entry, budget: Budget): 'dir' | 'file' {
  const name = entry.fileName;
  const unsafe = unsafeEntryName(name);
  if (unsafe) throw dangerous(`${JSON.stringify(name)} has ${unsafe}.`);
  const mode = (entry.externalFileAttributes >>> 16) & S_IFMT;
  if (mode === S_IFLNK) throw dangerous(`${JSON.stringify(name)} is a symbolic link.`);
  if (mode !== 0 && mode !== S_IFREG && mode !== S_IFDIR)
    throw dangerous(`${JSON.stringify(name)} is a device, a pipe or a socket.`);
  if (isExecutableName(name)) throw dangerous(`${JSON.stringify(name)} is an executable.`);
  if (name.endsWith('/') || mode === S_IFDIR) return 'dir';
  if (entry.isEncrypted()) throw unsupported(`${JSON.stringify(name)} is encrypted.`);
  if (!entry.canDecodeFileData()) throw unsupported(`${JSON.stringify(name)} is compressed with an unknown method.`);
  budget.declared(name, entry.compressedSize, entry.uncompressedSize);
  return 'file';
}

/** The first bytes of `source`, and the whole of it again (those bytes first). */
async function peek(source: AsyncIterable<Buffer>): Promise<{ head: Buffer; rest: AsyncGenerator<Buffer> }> {
  const it = source[Symbol.asyncIterator]();
  const first: Buffer[] = [];
  let size = 0;
  let ended = false;
  while (size < HEAD) {
    const next = await it.next();
    if (next.done) {
      ended = true;
      break;
    }
    first.push(next.value);
    size += next.value.length;
  }
  async function* rest(): AsyncGenerator<Buffer> {
    try {
      yield* first;
      if (ended) return;
      for (let next = await it.next(); !next.done; next = await it.next()) yield next.value;
    } finally {
      await it.return?.();
    }
  }
  return { head: Buffer.concat(first, size).subarray(0, HEAD), rest: rest() };
}

/** The bytes of an entry, its failures as refusals (they reach the reader of the member, not us). */
async function* refusing(source: AsyncIterable<Buffer>, as: (error: Error) => ArchiveRefused): AsyncGenerator<Buffer> {
  try {
    yield* source;
  } catch (error) {
    throw as(error as Error);
  }
}

async function drain(source: AsyncIterable<Buffer>): Promise<void> {
  for await (const _ of source);
}

/** The first header of a tar, as its gzip starts: a valid checksum, a safe name, no link. */
function checkTarHead(head: Buffer): void {
  let block: Buffer;
  try {
    block = gunzipSync(head, { finishFlush: constants.Z_SYNC_FLUSH });
  } catch (error) {
    throw unsupported(`Not a readable gzip: ${(error as Error).message}.`);
  }
  if (block.length < 512) throw unsupported('The gzip holds no tar (its first 512 bytes are not a tar header).');
  const stored = Number.parseInt(block.subarray(148, 156).toString('latin1').replace(/\0.*$/s, '').trim(), 8);
  let sum = 0;
  for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 0x20 : block[i]!;
  if (stored !== sum) throw unsupported('The gzip holds no tar (its first header does not check).');
  const name = block.subarray(0, 100).toString('utf8').replace(/\0.*$/s, '');
  const prefix = block.subarray(345, 500).toString('utf8').replace(/\0.*$/s, '');
  const full = prefix ? `${prefix}/${name}` : name;
  const unsafe = unsafeEntryName(full);
  if (unsafe) throw dangerous(`${JSON.stringify(full)} has ${unsafe}.`);
  if (block[156] === 0x31 || block[156] === 0x32) throw dangerous(`${JSON.stringify(full)} is a link.`);
  if (isExecutableName(full)) throw dangerous(`${JSON.stringify(full)} is an executable.`);
}

/**
 * Archives of imports read with yauzl (zip) and tar-stream over node's gunzip (tgz), straight
 * from the upload's parts. The rules, wherever an entry sits:
 *  - a name with `..`, an absolute path, a drive letter or a NUL, a link (symbolic or hard), a
 *    device, a Windows executable's name or an executable's bytes: refused, `dangerous`;
 *  - more than `entriesMax` entries, or more unpacked than `ratioMax` times the upload (past
 *    `ratioFloorBytes`) or `bytesMax`: refused, `dangerous`; a zip entry whose own declared
 *    ratio is past `ratioMax` too;
 *  - an archive inside is opened (one level); one inside that is refused, `dangerous`;
 *  - entries neither mail nor archive (a takeout's other files) are passed over.
 */
export class ArchiveReader implements ImportArchives {
  constructor(
    private readonly storage: ImportStorage,
    private readonly limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS,
  ) {}

  private range(a: ArchiveFile) {
    return (start: number, end: number) => this.storage.read(a.importId, a.file, a.chunks, a.chunkBytes, start, end);
  }

  async check(a: ArchiveFile): Promise<void> {
    if (a.format === 'tgz') return checkTarHead(await this.storage.head(a.importId, a.file, 64 * 1024));
    const budget = new Budget(this.limits, a.bytes);
    const zip = await openZip(this.range(a), a.bytes);
    try {
      if (zip.entryCount > this.limits.entriesMax)
        throw dangerous(`The archive holds ${zip.entryCount} entries; at most ${this.limits.entriesMax}.`);
      let declared = 0;
      let mail = 0;
      for await (const entry of zipEntries(zip)) {
        budget.entry();
        if (checkZipEntry(entry, budget) === 'dir' || entry.uncompressedSize === 0) continue;
        declared += entry.uncompressedSize;
        if (declared > budget.max)
          throw dangerous(
            `The archive declares more than ${budget.max} bytes unpacked (${this.limits.ratioMax} times its size at most).`,
          );
        const stream = await openEntry(zip, entry);
        let kind: ReturnType<typeof detectFormat>;
        try {
          kind = detectFormat((await peek(stream)).head);
        } catch (error) {
          throw refusal(error as Error);
        } finally {
          stream.destroy();
        }
        if (kind === 'dangerous') throw dangerous(`${JSON.stringify(entry.fileName)} is an executable.`);
        if (kind !== 'unsupported') mail++;
      }
      if (mail === 0) throw unsupported('The archive holds no mbox, message (.eml) or archive of them.');
    } finally {
      zip.close();
    }
  }

  async *members(a: ArchiveFile, from: number[]): AsyncGenerator<ArchiveMember> {
    const budget = new Budget(this.limits, a.bytes);
    if (a.format === 'zip') {
      yield* this.zip(a, this.range(a), a.bytes, [], (offset, read) => offset + read, from, budget);
      return;
    }
    let read = 0;
    const source = this.storage.read(a.importId, a.file, a.chunks, a.chunkBytes, 0);
    async function* counted(): AsyncGenerator<Buffer> {
      for await (const data of source) {
        read += (data as Buffer).length;
        yield data as Buffer;
      }
    }
    try {
      yield* this.tgz(a, counted(), [], () => read, from, budget);
    } finally {
      source.destroy();
    }
  }

  private async *zip(
    a: ArchiveFile,
    range: (start: number, end: number) => Readable,
    size: number,
    prefix: number[],
    position: (entryOffset: number, entryRead: number) => number,
    from: number[],
    budget: Budget,
  ): AsyncGenerator<ArchiveMember> {
    // Bytes of the zip read since the entry was opened: its local header and compressed data.
    let entryRead = 0;
    const counted = (start: number, end: number): Readable => {
      const count = new Transform({
        transform(data: Buffer, _encoding, done) {
          entryRead += data.length;
          done(null, data);
        },
      });
      return pipe(range(start, end), count, () => {});
    };
    const zip = await openZip(counted, size);
    try {
      let index = -1;
      for await (const entry of zipEntries(zip)) {
        index++;
        budget.entry();
        if (checkZipEntry(entry, budget) === 'dir' || entry.uncompressedSize === 0) continue;
        const path = [...prefix, index];
        if (before(path, from)) continue;
        entryRead = 0;
        const stream = await openEntry(zip, entry);
        const offset = entry.relativeOffsetOfLocalHeader;
        try {
          yield* this.entry(
            a,
            path,
            entry.fileName,
            refusing(budget.meter(stream), refusal),
            () => position(offset, entryRead),
            from,
            budget,
          );
        } catch (error) {
          throw refusal(error as Error);
        } finally {
          stream.destroy();
        }
      }
    } finally {
      zip.close();
    }
  }

  private async *tgz(
    a: ArchiveFile,
    source: AsyncIterable<Buffer>,
    prefix: number[],
    position: () => number,
    from: number[],
    budget: Budget,
  ): AsyncGenerator<ArchiveMember> {
    const extract = tar.extract();
    let failed: unknown = null;
    const piped = pipeline(source, createGunzip(), (s: AsyncIterable<Buffer>) => budget.meter(s), extract).catch(
      (error: unknown) => {
        failed = error;
      },
    );
    try {
      let index = -1;
      for await (const entry of extract) {
        index++;
        budget.entry();
        const { name, type, size } = entry.header;
        const unsafe = unsafeEntryName(name);
        if (unsafe) throw dangerous(`${JSON.stringify(name)} has ${unsafe}.`);
        if (type === 'symlink' || type === 'link') throw dangerous(`${JSON.stringify(name)} is a link.`);
        if (type !== 'file' && type !== 'contiguous-file' && type !== 'directory')
          throw dangerous(`${JSON.stringify(name)} is a device, a pipe or a socket.`);
        if (isExecutableName(name)) throw dangerous(`${JSON.stringify(name)} is an executable.`);
        const path = [...prefix, index];
        const content = entry as AsyncIterable<unknown> as AsyncIterable<Buffer>;
        if (type === 'directory' || !size || before(path, from)) {
          await drain(content);
          continue;
        }
        yield* this.entry(a, path, name, refusing(content, refusalOf), position, from, budget);
        await drain(content);
      }
    } catch (error) {
      throw failed ? refusalOf(failed) : refusalOf(error);
    } finally {
      extract.destroy();
      await piped;
    }
    if (failed) throw refusalOf(failed);
  }

  /** One file entry: mail is a member; an archive is opened when it is the first level. */
  private async *entry(
    a: ArchiveFile,
    path: number[],
    name: string,
    content: AsyncIterable<Buffer>,
    position: () => number,
    from: number[],
    budget: Budget,
  ): AsyncGenerator<ArchiveMember> {
    const { head, rest } = await peek(content);
    const kind = detectFormat(head);
    if (kind === 'dangerous') throw dangerous(`${JSON.stringify(name)} is an executable.`);
    if (kind === 'mbox' || kind === 'eml') {
      yield { path, name, format: kind, content: rest, position };
      return;
    }
    if (kind === 'unsupported') return;
    if (path.length > 1)
      throw dangerous(
        `${JSON.stringify(name)} is an archive inside an archive inside the upload: one level is opened.`,
      );
    if (kind === 'tgz') {
      yield* this.tgz(a, rest, path, position, from, budget);
      return;
    }
    // A zip is read from its end (the central directory): the inner one waits in the import's folder.
    const size = await this.storage.spool(a.importId, a.file, rest);
    try {
      yield* this.zip(
        a,
        (start, end) => this.storage.readSpool(a.importId, a.file, start, end),
        size,
        path,
        // Inside another member: that member's position (the inner zip is spooled whole, then read).
        position,
        from,
        budget,
      );
    } finally {
      await this.storage.dropSpool(a.importId, a.file);
    }
  }
}

/** A gzip or tar that breaks is an unreadable archive; our own refusals stay as they are. */
function refusalOf(error: unknown): ArchiveRefused {
  if (error instanceof ArchiveRefused) return error;
  return unsupported(`Not a readable tgz: ${error instanceof Error ? error.message : String(error)}.`);
}

/** One file entry of a zip read whole by name (ZipEntries). */
export interface ZipEntryInfo {
  name: string;
  bytes: number;
}

/**
 * A zip read by entry name in any order (a workspace export, restored): the same rules and limits
 * as an import's archive (names, links, executables, encryption, declared ratios, the unpacked
 * budget) and the same yauzl reading, through `range` (a file on disk). Only the central directory
 * is held; each entry is a stream, metered against the budget as it unpacks.
 */
export class ZipEntries {
  private constructor(
    private readonly zip: yauzl.ZipFile,
    private readonly byName: Map<string, yauzl.Entry>,
    private readonly budget: Budget,
  ) {}

  static async open(
    range: (start: number, end: number) => Readable,
    size: number,
    limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS,
  ): Promise<ZipEntries> {
    const budget = new Budget(limits, size);
    const zip = await openZip(range, size);
    try {
      if (zip.entryCount > limits.entriesMax)
        throw dangerous(`The archive holds ${zip.entryCount} entries; at most ${limits.entriesMax}.`);
      const byName = new Map<string, yauzl.Entry>();
      let declared = 0;
      for await (const entry of zipEntries(zip)) {
        budget.entry();
        if (checkZipEntry(entry, budget) === 'dir') continue;
        declared += entry.uncompressedSize;
        if (declared > budget.max)
          throw dangerous(
            `The archive declares more than ${budget.max} bytes unpacked (${limits.ratioMax} times its size at most).`,
          );
        byName.set(entry.fileName, entry);
      }
      return new ZipEntries(zip, byName, budget);
    } catch (error) {
      zip.close();
      throw error;
    }
  }

  /** The file entries, in the archive's order. */
  get entries(): ZipEntryInfo[] {
    return [...this.byName.values()].map((e) => ({ name: e.fileName, bytes: e.uncompressedSize }));
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  /** The entry's bytes as they unpack; a failure (a size other than declared, past the budget) as a refusal. */
  async *read(name: string): AsyncGenerator<Buffer> {
    const entry = this.byName.get(name);
    if (!entry) throw unsupported(`The archive has no ${JSON.stringify(name)}.`);
    const stream = await openEntry(this.zip, entry);
    try {
      yield* refusing(this.budget.meter(stream), refusal);
    } finally {
      stream.destroy();
    }
  }

  close(): void {
    this.zip.close();
  }
}
