import { createHash, randomBytes } from 'node:crypto';
import { type FileHandle, mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { type BlobRef, type BlobSource, type BlobStore, blobPath, type ByteRange } from './port.ts';

export interface FileBlobStoreOptions {
  /** The store's root; the embedded default is `<DATA_DIR>/blobs`. Created on first use. */
  dir: string;
  /**
   * Flush each blob (and the folder entry naming it) to the disk before `put` answers (default
   * true): a message we answered 250 for must survive a power cut (RFC 5321 section 6.1).
   * Benchmarks may turn it off to see what the flushes cost.
   */
  durable?: boolean;
}

/** Temporary files older than this are left from a crash and removed when a store opens. */
const STALE_TEMP_MS = 60 * 60 * 1000;

/**
 * The blob store as files: `<dir>/ab/cd/<sha256>`. A put writes to `<dir>/tmp/` (same file
 * system, so the move is atomic), hashing as it writes, flushes, then renames the file to its
 * address: a reader sees no file or the whole file. Storing bytes the store holds already leaves
 * the existing file alone.
 */
export class FileBlobStore implements BlobStore {
  readonly dir: string;
  readonly #tmp: string;
  readonly #durable: boolean;
  /** Folders known to exist, so a put costs no mkdir once its folder is there. */
  readonly #folders = new Set<string>();
  #ready: Promise<void> | undefined;

  constructor(options: FileBlobStoreOptions) {
    this.dir = path.resolve(options.dir);
    this.#tmp = path.join(this.dir, 'tmp');
    this.#durable = options.durable ?? true;
  }

  async put(source: BlobSource): Promise<BlobRef & { created: boolean }> {
    await this.#prepare();
    if (source instanceof Uint8Array) {
      const sha256 = createHash('sha256').update(source).digest('hex');
      const ref = { sha256, size: source.byteLength };
      if (await this.has(sha256)) return { ...ref, created: false };
      const temp = await this.#write(async (file) => {
        await file.writeFile(source);
      });
      return { ...ref, created: await this.#settle(temp, sha256) };
    }
    const hash = createHash('sha256');
    let size = 0;
    const temp = await this.#write(async (file) => {
      for await (const chunk of source as AsyncIterable<Uint8Array>) {
        hash.update(chunk);
        size += chunk.byteLength;
        await file.write(chunk);
      }
    });
    const sha256 = hash.digest('hex');
    return { sha256, size, created: await this.#settle(temp, sha256) };
  }

  async has(sha256: string): Promise<boolean> {
    try {
      await stat(this.#path(sha256));
      return true;
    } catch (error) {
      if (isMissing(error)) return false;
      throw error;
    }
  }

  async get(sha256: string): Promise<Buffer | null> {
    try {
      return await readFile(this.#path(sha256));
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
  }

  async stream(sha256: string, range?: ByteRange): Promise<Readable | null> {
    let file: FileHandle;
    try {
      file = await open(this.#path(sha256), 'r');
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
    return file.createReadStream({ autoClose: true, ...range });
  }

  async delete(sha256: string): Promise<void> {
    await rm(this.#path(sha256), { force: true });
  }

  async close(): Promise<void> {}

  #path(sha256: string): string {
    return path.join(this.dir, blobPath(sha256));
  }

  /** Writes a temporary file through `fill`, flushed; removes it if anything fails. */
  async #write(fill: (file: FileHandle) => Promise<void>): Promise<string> {
    const temp = path.join(this.#tmp, `${process.pid}-${randomBytes(8).toString('hex')}`);
    const file = await open(temp, 'wx', 0o600);
    try {
      await fill(file);
      if (this.#durable) await file.sync();
    } catch (error) {
      await file.close().catch(() => {});
      await rm(temp, { force: true });
      throw error;
    }
    await file.close();
    return temp;
  }

  /** Moves a written temporary file to its address; false when the address was taken already. */
  async #settle(temp: string, sha256: string): Promise<boolean> {
    const target = this.#path(sha256);
    if (await this.has(sha256)) {
      await rm(temp, { force: true });
      return false;
    }
    const folder = path.dirname(target);
    if (!this.#folders.has(folder)) {
      await mkdir(folder, { recursive: true, mode: 0o700 });
      this.#folders.add(folder);
    }
    // Two puts of the same bytes may both get here; the second rename replaces identical bytes.
    await rename(temp, target);
    if (this.#durable) await syncFolder(folder);
    return true;
  }

  #prepare(): Promise<void> {
    this.#ready ??= (async () => {
      await mkdir(this.#tmp, { recursive: true, mode: 0o700 });
      const now = Date.now();
      for (const name of await readdir(this.#tmp)) {
        const file = path.join(this.#tmp, name);
        const info = await stat(file).catch(() => null);
        if (info && now - info.mtimeMs > STALE_TEMP_MS) await rm(file, { force: true });
      }
    })().catch((error) => {
      // A folder that could not be made (permissions, a full disk) is tried again by the next put.
      this.#ready = undefined;
      throw error;
    });
    return this.#ready;
  }
}

/** A rename is on the disk once the folder holding the new name is flushed. */
async function syncFolder(folder: string): Promise<void> {
  const handle = await open(folder, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

function isMissing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException).code === 'ENOENT';
}
