import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, stat, utimes, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { FileBlobStore } from '../../infra/blobs/files.ts';
import { openBlobStore } from '../../infra/blobs/select.ts';
import { blobStoreContract } from './contract.ts';

const root = await mkdtemp(path.join(tmpdir(), 'wms-blobs-'));

t.test('contract', async (t) => {
  const dir = path.join(root, 'contract');
  blobStoreContract(t, {
    open: async () => new FileBlobStore({ dir }),
    leftovers: async () => readdir(path.join(dir, 'tmp')),
  });
});

t.test('a blob is a file at <dir>/ab/cd/<sha256>, readable by the service alone', async (t) => {
  const dir = path.join(root, 'layout');
  const store = new FileBlobStore({ dir });
  const bytes = Buffer.from('Subject: layout\r\n\r\nhello\r\n');
  const { sha256 } = await store.put(bytes);
  const file = path.join(dir, sha256.slice(0, 2), sha256.slice(2, 4), sha256);
  t.same(await readFile(file), bytes);
  t.equal((await stat(file)).mode & 0o777, 0o600);
  t.equal(sha256, createHash('sha256').update(bytes).digest('hex'));
});

t.test('temporary files a crash left are removed when the store opens, fresh ones are not', async (t) => {
  const dir = path.join(root, 'stale');
  await mkdir(path.join(dir, 'tmp'), { recursive: true });
  await writeFile(path.join(dir, 'tmp', 'old'), 'half a message');
  const twoHoursAgo = new Date(Date.now() - 2 * 3600_000);
  await utimes(path.join(dir, 'tmp', 'old'), twoHoursAgo, twoHoursAgo);
  await writeFile(path.join(dir, 'tmp', 'other-process'), 'being written');
  await new FileBlobStore({ dir }).put(Buffer.from('x'));
  t.same(await readdir(path.join(dir, 'tmp')), ['other-process']);
});

t.test('without BLOB_S3_URL the configuration picks files under <DATA_DIR>/blobs', async (t) => {
  const dataDir = path.join(root, 'data');
  const store = await openBlobStore({ s3Url: undefined, dataDir });
  t.type(store, FileBlobStore);
  t.equal((store as FileBlobStore).dir, path.join(dataDir, 'blobs'));
});
