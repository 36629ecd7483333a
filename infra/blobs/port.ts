import type { Readable } from 'node:stream';

/**
 * The blob store port: raw messages and attachments, stored once, addressed by the SHA-256 of
 * their bytes (architecture decision 12). Two adapters: files under `DATA_DIR` (the embedded
 * default, infra/blobs/files.ts) and an S3-compatible bucket (infra/blobs/s3.ts), chosen by
 * configuration (infra/blobs/select.ts). Both are held to one contract (test/blobs/contract.ts).
 *
 * A blob is immutable and whole: `has`, `get` and `stream` see either nothing or every byte of
 * it, never a part; storing the same bytes again stores nothing new. Only a blob one owner alone
 * refers to is deleted (an export's zip, by its retention): what a message may share is a
 * question for whoever keeps the references.
 */
export interface BlobRef {
  /** Lower-case hex SHA-256 of the bytes: the blob's address. */
  sha256: string;
  size: number;
}

/** Bytes `start` to `end` of a blob, both included (as HTTP `Range` counts them). */
export interface ByteRange {
  start: number;
  end: number;
}

export type BlobSource = Uint8Array | Readable | AsyncIterable<Uint8Array>;

export interface BlobStore {
  /**
   * Stores the bytes and answers their address; `created` is false when the store held them
   * already. A source that fails (a stream that errors, a limit a caller's transform enforces)
   * rejects the put and leaves nothing behind. A store without room rejects with `code`
   * `ENOSPC` (a full disk, a full bucket or its quota): the upload answers 507, not 502.
   */
  put(source: BlobSource): Promise<BlobRef & { created: boolean }>;
  has(sha256: string): Promise<boolean>;
  /** The whole blob in memory, or null when the store does not hold it. */
  get(sha256: string): Promise<Buffer | null>;
  /**
   * The blob as a stream (for large ones), or null when the store does not hold it. With `range`,
   * only bytes `start` to `end` (both included, within the blob): a download that resumes.
   */
  stream(sha256: string, range?: ByteRange): Promise<Readable | null>;
  /** Removes the blob; removing one the store does not hold is no error. */
  delete(sha256: string): Promise<void>;
  close(): Promise<void>;
}

const SHA256_HEX = /^[0-9a-f]{64}$/;

/** Refuses anything but an address: a malformed one must never become a path or an object key. */
export function checkAddress(sha256: string): string {
  if (!SHA256_HEX.test(sha256)) throw new TypeError(`blobs: not a SHA-256 address: ${JSON.stringify(sha256)}`);
  return sha256;
}

/**
 * Where a blob lives below the store's root, the same in both adapters: `ab/cd/<hash>`. Two
 * levels of 256 folders keep every folder small up to hundreds of millions of blobs, and one
 * layout lets an operator copy a file store into a bucket as it is when moving to S3.
 */
export function blobPath(sha256: string): string {
  checkAddress(sha256);
  return `${sha256.slice(0, 2)}/${sha256.slice(2, 4)}/${sha256}`;
}
