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
  /** File `file` from byte `offset` to `end` (exclusive; its end when left out), its parts one after another. */
  read(importId: string, file: number, chunkCount: number, chunkBytes: number, offset: number, end?: number): Readable;
  /**
   * Copies `source` into the import's folder as its spool for file `file` (an archive inside an
   * archive, which is read out of order), replacing any spool before; answers its size.
   */
  spool(importId: string, file: number, source: AsyncIterable<Buffer>): Promise<number>;
  /** The spool of file `file` from `offset` to `end` (exclusive). */
  readSpool(importId: string, file: number, offset: number, end: number): Readable;
  /** Deletes the spool of file `file`, if any. */
  dropSpool(importId: string, file: number): Promise<void>;
  /** Deletes the import's folder and everything in it. */
  remove(importId: string): Promise<void>;
  /** When a part was last stored (the newest in the folder); null when none is. */
  lastWrite(importId: string): Promise<Date | null>;
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

/** How far an archive (.zip, .tgz) of an import may unpack. */
export interface ArchiveLimits {
  /** Entries of every kind, an inner archive's counted too. */
  entriesMax: number;
  /** Bytes unpacked in all, at every level. */
  bytesMax: number;
  /** Bytes unpacked per byte of the upload (and per compressed byte of one zip entry)… */
  ratioMax: number;
  /** …counted only past this many unpacked bytes: a small archive cannot be a bomb. */
  ratioFloorBytes: number;
}

/** A mail file inside an archive, its bytes as they unpack. */
export interface ArchiveMember {
  /** Its place: the entry's number in the archive, then in the inner archive when it sits in one. */
  path: number[];
  name: string;
  format: 'mbox' | 'eml';
  content: AsyncIterable<Buffer>;
  /**
   * Bytes of the upload read so far, moving as this member unpacks (the import's
   * `processedBytes`): a takeout is often one tgz holding one mbox of many gigabytes.
   */
  position(): number;
}

/** One archive file of an import: where its parts are. */
export interface ArchiveFile {
  importId: string;
  file: number;
  bytes: number;
  chunks: number;
  chunkBytes: number;
  format: 'zip' | 'tgz';
}

/**
 * Reads the archives of imports out of their parts, entry by entry, as streams: nothing is
 * unpacked to disk (an inner zip, read out of order, is spooled into the import's own folder).
 */
export interface ImportArchives {
  /**
   * What can be checked before the import is queued: a zip's whole central directory (names, links,
   * entry count, declared sizes and ratios) and each entry's first bytes; a tgz's first header.
   * Throws `ArchiveRefused`.
   */
  check(archive: ArchiveFile): Promise<void>;
  /**
   * The mail files of the archive in order, from the member at `from` on (earlier ones are passed
   * over). Each member's content must be read through or left before the next is asked for. Throws
   * `ArchiveRefused` (with `kind` `dangerous` for what the limits and rules refuse) when the bytes
   * show what the directory did not.
   */
  members(archive: ArchiveFile, from: number[]): AsyncGenerator<ArchiveMember>;
}

/** An archive refused: `dangerous` (traversal, links, executables, past a limit) or `unsupported` (unreadable, no mail). */
export class ArchiveRefused extends Error {
  constructor(
    readonly kind: 'dangerous' | 'unsupported',
    message: string,
  ) {
    super(message);
  }
}
