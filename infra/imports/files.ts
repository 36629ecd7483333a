import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readdir, rename, rm, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ChunkSizeError, type ImportStorage } from './port.ts';

const ID = /^imp_[0-9a-f]{24}$/;

/** Import uploads as files under `<root>/<importId>/<file>.<chunk>` (infra/imports/port.ts). */
export class FileImportStorage implements ImportStorage {
  constructor(private readonly root: string) {}

  private dir(importId: string): string {
    // The id is checked, never trusted: it is the only caller-influenced part of a path.
    if (!ID.test(importId)) throw new TypeError(`imports: not an import id: ${JSON.stringify(importId)}`);
    return path.join(this.root, importId);
  }

  private part(importId: string, file: number, chunk: number): string {
    if (!Number.isSafeInteger(file) || !Number.isSafeInteger(chunk) || file < 0 || chunk < 0)
      throw new TypeError('imports: part numbers are non-negative integers');
    return path.join(this.dir(importId), `${file}.${chunk}`);
  }

  async putChunk(importId: string, file: number, chunk: number, bytes: number, source: Buffer | Readable) {
    const dir = this.dir(importId);
    await mkdir(dir, { recursive: true });
    const target = this.part(importId, file, chunk);
    // Written aside, then renamed over the part: a cut upload leaves no half part behind.
    const temp = path.join(dir, `.${file}.${chunk}.${randomBytes(6).toString('hex')}`);
    let received = 0;
    const count = new Transform({
      transform(data: Buffer, _enc, done) {
        received += data.length;
        if (received > bytes) return done(new ChunkSizeError(bytes, received));
        done(null, data);
      },
    });
    try {
      await pipeline(Buffer.isBuffer(source) ? Readable.from([source]) : source, count, createWriteStream(temp));
      if (received !== bytes) throw new ChunkSizeError(bytes, received);
      await rename(temp, target);
    } catch (error) {
      await unlink(temp).catch(() => {});
      throw error;
    }
  }

  async chunks(importId: string, file: number): Promise<Map<number, number>> {
    const found = new Map<number, number>();
    let names: string[];
    try {
      names = await readdir(this.dir(importId));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return found;
      throw error;
    }
    for (const name of names) {
      const m = /^(\d+)\.(\d+)$/.exec(name);
      if (!m || Number(m[1]) !== file) continue;
      found.set(Number(m[2]), (await stat(path.join(this.dir(importId), name))).size);
    }
    return found;
  }

  async head(importId: string, file: number, bytes: number): Promise<Buffer> {
    const parts: Buffer[] = [];
    let size = 0;
    try {
      for await (const data of createReadStream(this.part(importId, file, 0), { start: 0, end: bytes - 1 })) {
        parts.push(data as Buffer);
        size += (data as Buffer).length;
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    return Buffer.concat(parts, size);
  }

  read(importId: string, file: number, chunkCount: number, chunkBytes: number, offset: number, end?: number): Readable {
    const first = Math.floor(offset / chunkBytes);
    const last = end === undefined ? chunkCount - 1 : Math.min(chunkCount - 1, Math.floor((end - 1) / chunkBytes));
    const parts = async function* (this: FileImportStorage): AsyncGenerator<Buffer> {
      for (let chunk = first; chunk <= last && (end === undefined || offset < end); chunk++) {
        const start = chunk === first ? offset - chunk * chunkBytes : 0;
        const stop = end !== undefined && chunk === last ? end - chunk * chunkBytes - 1 : undefined;
        yield* createReadStream(this.part(importId, file, chunk), { start, end: stop });
      }
    };
    // One part open at a time; a reader that stops early closes it.
    return Readable.from(parts.call(this), { objectMode: false });
  }

  private spoolPath(importId: string, file: number): string {
    if (!Number.isSafeInteger(file) || file < 0) throw new TypeError('imports: file numbers are non-negative integers');
    return path.join(this.dir(importId), `spool-${file}`);
  }

  async spool(importId: string, file: number, source: AsyncIterable<Buffer>): Promise<number> {
    await mkdir(this.dir(importId), { recursive: true });
    let size = 0;
    await pipeline(
      source,
      new Transform({
        transform(data: Buffer, _enc, done) {
          size += data.length;
          done(null, data);
        },
      }),
      createWriteStream(this.spoolPath(importId, file)),
    );
    return size;
  }

  readSpool(importId: string, file: number, offset: number, end: number): Readable {
    if (end <= offset) return Readable.from([]);
    return createReadStream(this.spoolPath(importId, file), { start: offset, end: end - 1 });
  }

  async dropSpool(importId: string, file: number): Promise<void> {
    await rm(this.spoolPath(importId, file), { force: true });
  }

  async remove(importId: string): Promise<void> {
    await rm(this.dir(importId), { recursive: true, force: true });
  }

  async lastWrite(importId: string): Promise<Date | null> {
    // The folder's own time: every part lands by a rename into it, which moves it on (one stat,
    // not one per part; a part being written counts too, through its temporary name).
    try {
      return (await stat(this.dir(importId))).mtime;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
  }
}
