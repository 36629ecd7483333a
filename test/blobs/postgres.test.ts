import { mkdtemp, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { FileBlobStore } from '../../infra/blobs/files.ts';
import { SmallBlobTier } from '../../infra/blobs/postgres.ts';
import { openPool } from '../../infra/db.ts';
import { freshDatabase } from '../support/database.ts';
import { blobStoreContract } from './contract.ts';

const root = await mkdtemp(path.join(tmpdir(), 'wms-blobs-pg-'));

async function tier(t: Parameters<typeof freshDatabase>[0], dir: string, maxBytes?: number) {
  const pool = openPool({ connectionString: await freshDatabase(t), max: 4 });
  t.teardown(() => pool.end());
  await SmallBlobTier.migrate(pool);
  const files = new FileBlobStore({ dir });
  return { pool, files, store: new SmallBlobTier(pool, files, maxBytes === undefined ? {} : { maxBytes }) };
}

t.test('contract: rows below the limit, files above it', async (t) => {
  const dir = path.join(root, 'contract');
  // A limit the contract's blobs fall on both sides of (it stores up to 3 MiB).
  const { store } = await tier(t, dir, 64 * 1024);
  blobStoreContract(t, {
    open: async () => store,
    leftovers: async () => readdir(path.join(dir, 'tmp')).catch(() => []),
  });
});

t.test('where each blob lives: a small one as a row only, a large one as a file only', async (t) => {
  const dir = path.join(root, 'where');
  const { pool, files, store } = await tier(t, dir, 1024);
  const small = await store.put(Buffer.alloc(1024, 'a'));
  const large = await store.put(Buffer.alloc(1025, 'b'));
  const rows = await pool.query('SELECT sha256, length(bytes) AS n FROM blobs_small');
  t.same(rows.rows, [{ sha256: small.sha256, n: 1024 }]);
  t.equal(await files.has(small.sha256), false);
  t.equal(await files.has(large.sha256), true);
  t.equal(await store.has(large.sha256), true);
});

t.test('what the store behind held before the tier is still found through it', async (t) => {
  const dir = path.join(root, 'before');
  const { files, store } = await tier(t, dir);
  const older = await files.put(Buffer.from('Subject: stored before\r\n\r\nhello\r\n'));
  t.equal(await store.has(older.sha256), true);
  t.equal((await store.get(older.sha256))?.toString(), 'Subject: stored before\r\n\r\nhello\r\n');
});

t.test('puts waiting together go out as one INSERT, each answered', async (t) => {
  const dir = path.join(root, 'grouped');
  const { pool, store } = await tier(t, dir);
  const inserts: number[] = [];
  pool.on('acquire', () => inserts.push(inserts.length));
  const blobs = Array.from({ length: 200 }, (_, i) => Buffer.from(`message ${i}`));
  const refs = await Promise.all(blobs.map((b) => store.put(b)));
  t.ok(inserts.length <= 3, `200 puts took ${inserts.length} connections`);
  t.ok(refs.every((r) => r.created));
  const read = await Promise.all(refs.map(async (r) => (await store.get(r.sha256))?.toString()));
  t.same(read, blobs.map(String));
});

t.test('a failed INSERT fails the puts that waited on it, and nothing is stored', async (t) => {
  const dir = path.join(root, 'failed');
  const { pool, store } = await tier(t, dir);
  await pool.query('ALTER TABLE blobs_small ADD CONSTRAINT no_x CHECK (position($$x$$::bytea IN bytes) = 0)');
  await t.rejects(store.put(Buffer.from('x marks it')));
  t.equal((await pool.query('SELECT count(*)::int AS n FROM blobs_small')).rows[0].n, 0);
  const ok = await store.put(Buffer.from('fine'));
  t.equal(ok.created, true, 'the next put is not held back by the failure');
});
