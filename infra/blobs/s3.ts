import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, open, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { type BlobRef, type BlobSource, type BlobStore, blobPath, type ByteRange } from './port.ts';

/**
 * `BLOB_S3_URL` read: `http(s)://[<access key>:<secret>@]<endpoint host[:port]>/<bucket>[/<prefix>]`
 * with optional query `region` (default `us-east-1`) and `style` (`path`, the default, or
 * `virtual`). Without credentials in the URL the SDK's own chain applies (`AWS_ACCESS_KEY_ID`
 * and friends, an instance role). Path style by default because every S3-compatible server
 * speaks it (MinIO, Ceph, Garage, R2) and AWS still does.
 */
export interface S3Location {
  endpoint: string;
  bucket: string;
  /** Key prefix, empty or ending in `/`. */
  prefix: string;
  region: string;
  forcePathStyle: boolean;
  credentials: { accessKeyId: string; secretAccessKey: string } | undefined;
}

export function parseS3Url(value: string): S3Location {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    // The value may hold a secret: never repeat it.
    throw new Error('BLOB_S3_URL is not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new Error(`BLOB_S3_URL must be http: or https:, got ${url.protocol}`);
  const [bucket, ...rest] = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
  if (!bucket) throw new Error('BLOB_S3_URL names no bucket (its path is /<bucket>[/<prefix>])');
  const style = url.searchParams.get('style') ?? 'path';
  if (style !== 'path' && style !== 'virtual') throw new Error(`BLOB_S3_URL style must be path or virtual`);
  const accessKeyId = decodeURIComponent(url.username);
  const secretAccessKey = decodeURIComponent(url.password);
  if (Boolean(accessKeyId) !== Boolean(secretAccessKey))
    throw new Error('BLOB_S3_URL carries an access key without a secret, or a secret without a key');
  return {
    endpoint: `${url.protocol}//${url.host}`,
    bucket,
    prefix: rest.length > 0 ? `${rest.join('/')}/` : '',
    region: url.searchParams.get('region') ?? 'us-east-1',
    forcePathStyle: style === 'path',
    credentials: accessKeyId ? { accessKeyId, secretAccessKey } : undefined,
  };
}

export interface S3BlobStoreOptions {
  /**
   * A local folder where a streamed blob waits while it is hashed: S3 wants the length before
   * the bytes, and the address is the hash of the bytes. `<DATA_DIR>/tmp/s3-spool` by default.
   */
  spoolDir: string;
}

/**
 * The blob store in an S3-compatible bucket, objects at `<prefix>ab/cd/<sha256>` (the file
 * store's layout). Bytes in memory go up as they are; a stream is spooled to a local file first,
 * then sent with its length. Each PUT carries `x-amz-checksum-sha256`, so a store that checks it
 * (AWS, MinIO) refuses bytes damaged on the way. Existing objects are not written again. A bucket
 * without room rejects the put with `code` `ENOSPC`, as a full disk does the file store's.
 */
export class S3BlobStore implements BlobStore {
  readonly #client: S3Client;
  readonly #location: S3Location;
  readonly #spoolDir: string;
  #spoolReady: Promise<unknown> | undefined;

  private constructor(client: S3Client, location: S3Location, spoolDir: string) {
    this.#client = client;
    this.#location = location;
    this.#spoolDir = spoolDir;
  }

  /** Opens the store and checks the bucket answers, so a wrong URL stops the start, not a message. */
  static async open(location: S3Location, options: S3BlobStoreOptions): Promise<S3BlobStore> {
    const client = new S3Client({
      endpoint: location.endpoint,
      region: location.region,
      forcePathStyle: location.forcePathStyle,
      credentials: location.credentials,
      // The SDK's default CRC32 trailers (aws-chunked uploads) are not understood by every
      // S3-compatible server; our PUTs carry a SHA-256 checksum of their own instead.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
    try {
      await client.send(new HeadBucketCommand({ Bucket: location.bucket }));
    } catch (error) {
      client.destroy();
      throw new Error(
        `blobs: the bucket ${location.bucket} at ${location.endpoint} did not answer: ${describe(error)}`,
      );
    }
    return new S3BlobStore(client, location, path.resolve(options.spoolDir));
  }

  async put(source: BlobSource): Promise<BlobRef & { created: boolean }> {
    if (source instanceof Uint8Array) {
      const digest = createHash('sha256').update(source).digest();
      return this.#upload(digest, source.byteLength, () => source);
    }
    const spooled = await this.#spool(source);
    try {
      return await this.#upload(spooled.digest, spooled.size, () => createReadStream(spooled.file));
    } finally {
      await rm(spooled.file, { force: true });
    }
  }

  async has(sha256: string): Promise<boolean> {
    try {
      await this.#client.send(new HeadObjectCommand({ Bucket: this.#location.bucket, Key: this.#key(sha256) }));
      return true;
    } catch (error) {
      if (isNotFound(error)) return false;
      throw error;
    }
  }

  async get(sha256: string): Promise<Buffer | null> {
    const body = await this.#body(sha256);
    return body ? Buffer.from(await body.transformToByteArray()) : null;
  }

  async stream(sha256: string, range?: ByteRange): Promise<Readable | null> {
    return (await this.#body(sha256, range)) as (Readable & { transformToByteArray(): Promise<Uint8Array> }) | null;
  }

  async delete(sha256: string): Promise<void> {
    await this.#client.send(new DeleteObjectCommand({ Bucket: this.#location.bucket, Key: this.#key(sha256) }));
  }

  async close(): Promise<void> {
    this.#client.destroy();
  }

  #key(sha256: string): string {
    return `${this.#location.prefix}${blobPath(sha256)}`;
  }

  async #body(sha256: string, range?: ByteRange) {
    try {
      const answer = await this.#client.send(
        new GetObjectCommand({
          Bucket: this.#location.bucket,
          Key: this.#key(sha256),
          ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}),
        }),
      );
      return answer.Body ?? null;
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  async #upload(
    digest: Buffer,
    size: number,
    body: () => Uint8Array | Readable,
  ): Promise<BlobRef & { created: boolean }> {
    const sha256 = digest.toString('hex');
    if (await this.has(sha256)) return { sha256, size, created: false };
    try {
      await this.#client.send(
        new PutObjectCommand({
          Bucket: this.#location.bucket,
          Key: this.#key(sha256),
          Body: body(),
          ContentLength: size,
          ContentType: 'application/octet-stream',
          ChecksumSHA256: digest.toString('base64'),
        }),
      );
    } catch (error) {
      if (isStorageFull(error))
        throw Object.assign(new Error(`blobs: the bucket ${this.#location.bucket} has no room: ${describe(error)}`), {
          code: 'ENOSPC',
          cause: error,
        });
      throw error;
    }
    return { sha256, size, created: true };
  }

  async #spool(source: Readable | AsyncIterable<Uint8Array>) {
    this.#spoolReady ??= mkdir(this.#spoolDir, { recursive: true, mode: 0o700 }).catch((error) => {
      this.#spoolReady = undefined;
      throw error;
    });
    await this.#spoolReady;
    const file = path.join(this.#spoolDir, `${process.pid}-${randomBytes(8).toString('hex')}`);
    const handle = await open(file, 'wx', 0o600);
    const hash = createHash('sha256');
    let size = 0;
    try {
      for await (const chunk of source) {
        hash.update(chunk);
        size += chunk.byteLength;
        await handle.write(chunk);
      }
      await handle.close();
    } catch (error) {
      await handle.close().catch(() => {});
      await rm(file, { force: true });
      throw error;
    }
    return { file, size, digest: hash.digest() };
  }
}

function isNotFound(error: unknown): boolean {
  return (
    error instanceof S3ServiceException &&
    (error.name === 'NoSuchKey' || error.name === 'NotFound' || error.$metadata.httpStatusCode === 404)
  );
}

/**
 * What S3-compatible servers answer when a write finds no room: 507 Insufficient Storage (MinIO's
 * `XMinioStorageFull` below its free-space threshold), MinIO's bucket quota (400
 * `XMinioAdminBucketQuotaExceeded`) and Ceph RGW's user or bucket quota (403 `QuotaExceeded`).
 * Recognised by code, not status alone: a plain 400 or 403 is a mistake of ours, not a full store.
 */
const STORAGE_FULL_CODES = new Set(['XMinioStorageFull', 'XMinioAdminBucketQuotaExceeded', 'QuotaExceeded']);

function isStorageFull(error: unknown): boolean {
  return (
    error instanceof S3ServiceException &&
    (error.$metadata.httpStatusCode === 507 || STORAGE_FULL_CODES.has(error.name))
  );
}

function describe(error: unknown): string {
  if (error instanceof S3ServiceException) return `${error.name} (HTTP ${error.$metadata.httpStatusCode ?? '?'})`;
  return (error as Error).message;
}
