import { mkdtemp, rm } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';

export const S3_KEY = 'S3RVER';
export const S3_SECRET = 'S3RVER';

/** How the server refuses an object PUT: an S3 error answer, or a connection dropped unanswered. */
export type PutRefusal = { status: number; code: string } | 'drop';

type RefusingMiddleware = (
  ctx: { method: string; path: string; req: IncomingMessage; status: number; type: string; body: unknown },
  next: () => Promise<void>,
) => Promise<void>;

/**
 * A real S3-compatible server on loopback (s3rver: the S3 REST protocol over HTTP, objects as
 * files in a temporary folder), with `bucket` made. It refuses an access key it does not know
 * (403 InvalidAccessKeyId) but does not check V4 signatures themselves, nor `x-amz-checksum-*`.
 */
export async function startS3Server(t: { teardown(fn: () => Promise<void> | void): void }, bucket = 'mail-blobs') {
  const directory = await mkdtemp(path.join(tmpdir(), 'wms-s3-'));
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory });
  let refusal: PutRefusal | null = null;
  // s3rver is a Koa app (its types leave that out): first in line, ahead of its own routes, as
  // Koa composes the list when the server starts.
  (server as unknown as { middleware: RefusingMiddleware[] }).middleware.unshift(async (ctx, next) => {
    const isObjectPut = ctx.method === 'PUT' && ctx.path.split('/').filter(Boolean).length > 1;
    if (!refusal || !isObjectPut) return next();
    if (refusal === 'drop') {
      ctx.req.socket.destroy();
      return;
    }
    ctx.status = refusal.status;
    ctx.type = 'application/xml';
    ctx.body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${refusal.code}</Code><Message>Refused by the test.</Message></Error>`;
  });
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
    /**
     * From now on every object PUT is answered with this S3 error, or its connection dropped,
     * until called with null; reads and bucket requests are served as usual.
     */
    refusePuts: (answer: PutRefusal | null) => {
      refusal = answer;
    },
    url: (prefix = '') => `http://${S3_KEY}:${S3_SECRET}@127.0.0.1:${port}/${bucket}${prefix ? `/${prefix}` : ''}`,
  };
}
