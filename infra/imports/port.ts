import type { Readable } from 'node:stream';

/**
 * Where the files of a mailbox import wait between upload and import: a folder of the import's
 * own, each part a file of its own, deleted whole when the import settles. Nothing outside that
 * folder is ever written; names are built from the import id and numbers only, never from what a
 * caller sent.
 */
export interface ImportStorage {
  /**
   * Stores part `chunk` of file `file` from `source`, which must be exactly `bytes` long (else
   * `ChunkSizeError`, nothing kept). A part stored again is replaced whole: a reader sees either
   * the old or the new part, never a mix. A full disk rejects with `code` `ENOSPC`.
   */
  putChunk(importId: string, file: number, chunk: number, bytes: number, source: Buffer | Readable): Promise<void>;
  /** The sizes of the parts stored for file `file`, by part number. */
  chunks(importId: string, file: number): Promise<Map<number, number>>;
  /** The first `bytes` of file `file` (from its first part). */
  head(importId: string, file: number, bytes: number): Promise<Buffer>;
  /** File `file` from byte `offset` to its end, its parts one after another. */
  read(importId: string, file: number, chunkCount: number, chunkBytes: number, offset: number): Readable;
  /** Deletes the import's folder and everything in it. */
  remove(importId: string): Promise<void>;
}

/** The bytes of a part were not the size the upload plan says. */
export class ChunkSizeError extends Error {
  constructor(
    readonly expected: number,
    readonly received: number,
  ) {
    super(`expected ${expected} bytes, received ${received}`);
  }
}
