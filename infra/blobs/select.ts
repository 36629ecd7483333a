import path from 'node:path';
import { FileBlobStore } from './files.ts';
import type { BlobStore } from './port.ts';

export interface BlobConfig {
  /** `BLOB_S3_URL`: an S3-compatible bucket; without it, files under `<dataDir>/blobs`. */
  s3Url: string | undefined;
  dataDir: string;
}

/**
 * The blob store the configuration picks. The S3 client is loaded only when a bucket is
 * configured: the SDK takes more than half a second to import, which the embedded default and
 * the CLI should not pay.
 */
export async function openBlobStore(config: BlobConfig): Promise<BlobStore> {
  if (!config.s3Url) return new FileBlobStore({ dir: path.join(config.dataDir, 'blobs') });
  const { S3BlobStore, parseS3Url } = await import('./s3.ts');
  return S3BlobStore.open(parseS3Url(config.s3Url), { spoolDir: path.join(config.dataDir, 'tmp', 's3-spool') });
}
