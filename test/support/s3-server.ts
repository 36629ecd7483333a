import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';

export const S3_KEY = 'S3RVER';
export const S3_SECRET = 'S3RVER';

/**
 * A real S3-compatible server on loopback (s3rver: the S3 REST protocol over HTTP, objects as
 * files in a temporary folder), with `bucket` made. It refuses an access key it does not know
 * (403 InvalidAccessKeyId) but does not check V4 signatures themselves, nor `x-amz-checksum-*`.
 */
export async function startS3Server(t: { teardown(fn: () => Promise<void> | void): void }, bucket = 'mail-blobs') {
  const directory = await mkdtemp(path.join(tmpdir(), 'wms-s3-'));
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: S3_KEY, secretAccessKey: S3_SECRET },
  });
  await client.send(new CreateBucketCommand({ Bucket: bucket }));
  t.teardown(async () => {
    client.destroy();
    await server.close();
    await rm(directory, { recursive: true, force: true });
  });
  return {
    endpoint,
    bucket,
    /** The folder s3rver keeps objects in. */
    directory,
    /** A client of its own, to look at objects as another S3 user would. */
    client,
    url: (prefix = '') => `http://${S3_KEY}:${S3_SECRET}@127.0.0.1:${port}/${bucket}${prefix ? `/${prefix}` : ''}`,
  };
}
