import { createHash } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import t from 'tap';
import { parseS3Url, S3BlobStore } from '../../infra/blobs/s3.ts';
import { openBlobStore } from '../../infra/blobs/select.ts';
import { startS3Server, S3_KEY, S3_SECRET } from '../support/s3-server.ts';
import { blobStoreContract } from './contract.ts';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';

const s3 = await startS3Server(t);
const dataDir = await mkdtemp(path.join(tmpdir(), 'wms-s3-data-'));
const spool = path.join(dataDir, 'tmp', 's3-spool');

t.test('contract', async (t) => {
  blobStoreContract(t, {
    open: () => openBlobStore({ s3Url: s3.url('contract'), dataDir }),
    leftovers: async () => readdir(spool).catch(() => []),
  });
});

t.test('objects sit at <prefix>/ab/cd/<sha256>, the file store layout', async (t) => {
  const store = await S3BlobStore.open(parseS3Url(s3.url('mail/raw')), { spoolDir: spool });
  t.teardown(() => store.close());
  const bytes = Buffer.from('Subject: layout\r\n\r\nhello\r\n');
  const { sha256 } = await store.put(bytes);
  t.equal(sha256, createHash('sha256').update(bytes).digest('hex'));
  const object = await s3.client.send(
    new GetObjectCommand({ Bucket: s3.bucket, Key: `mail/raw/${sha256.slice(0, 2)}/${sha256.slice(2, 4)}/${sha256}` }),
  );
  t.equal(await object.Body!.transformToString(), bytes.toString());
});

t.test('a bucket that is not there, or an unknown key, stops the opening', async (t) => {
  await t.rejects(
    openBlobStore({ s3Url: s3.url().replace(s3.bucket, 'no-such-bucket'), dataDir }),
    /bucket no-such-bucket .* did not answer: NotFound/,
  );
  const unknownKey = s3.url().replace(`${S3_KEY}:${S3_SECRET}@`, 'NOBODY:not-the-secret@');
  const refused = openBlobStore({ s3Url: unknownKey, dataDir });
  await t.rejects(refused, /did not answer: .*HTTP 403/);
  await refused.catch((error: Error) => t.notMatch(error.message, /not-the-secret/, 'the secret is not repeated'));
});

t.test('BLOB_S3_URL', async (t) => {
  t.same(parseS3Url('https://AKIA:s%2Fecret@s3.eu-central-1.amazonaws.com/mail/blobs/raw?region=eu-central-1'), {
    endpoint: 'https://s3.eu-central-1.amazonaws.com',
    bucket: 'mail',
    prefix: 'blobs/raw/',
    region: 'eu-central-1',
    forcePathStyle: true,
    credentials: { accessKeyId: 'AKIA', secretAccessKey: 's/ecret' },
  });
  t.match(parseS3Url('http://minio:9000/b?style=virtual'), {
    endpoint: 'http://minio:9000',
    bucket: 'b',
    prefix: '',
    region: 'us-east-1',
    forcePathStyle: false,
    credentials: undefined,
  });
  t.throws(() => parseS3Url('s3://bucket'), /must be http: or https:/);
  t.throws(() => parseS3Url('http://minio:9000/'), /names no bucket/);
  t.throws(() => parseS3Url('http://key@minio:9000/b'), /access key without a secret/);
  t.throws(() => parseS3Url('http://minio:9000/b?style=dns'), /style must be path or virtual/);
  t.throws(
    () => parseS3Url('http//key:s3cret@minio/b'),
    { message: 'BLOB_S3_URL is not a URL' },
    'the secret is not repeated',
  );
});
