import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import t, { type Test } from 'tap';
import { SMALL_BLOB_MAX } from '../../infra/blobs/postgres.ts';
import { startTestApp } from '../support/app.ts';
import { errorOf } from '../support/domains.ts';
import { startS3Server } from '../support/s3-server.ts';

/**
 * Uploads onto an S3 bucket that refuses them: a full one (507 `upload_storage_full`) and a
 * failing one (502 `upload_failed`). The bucket is s3rver on loopback, told to refuse object PUTs;
 * nothing may be recorded, and the same upload goes through once the bucket takes it.
 */
const s3 = await startS3Server(t);
const h = await startTestApp(t, { blobS3Url: s3.url('blobs') });
const ws = await h.workspace();

// Past the small tier, so the bytes go to the bucket and not to PostgreSQL.
const bytes = Buffer.alloc(SMALL_BLOB_MAX + 1024, 'report line\n');
const upload = () =>
  h.request(ws.apiKey, 'POST', '/files', bytes, { 'content-type': 'text/plain', 'x-filename': 'report.txt' });

const nothingKept = async (t: Test) => {
  const list = await h.request(ws.apiKey, 'GET', '/files');
  t.equal(list.statusCode, 200, list.body);
  t.same(list.json().data, [], 'no file is listed');
  const { rows } = await h.system.database.pool.query("SELECT 1 FROM es_events WHERE type = 'FileUploaded'");
  t.equal(rows.length, 0, 'no FileUploaded event');
  const objects = await s3.client.send(new ListObjectsV2Command({ Bucket: s3.bucket }));
  t.equal(objects.KeyCount, 0, 'no object in the bucket');
};

const refusals = [
  { name: 'MinIO below its free-space threshold', answer: { status: 507, code: 'XMinioStorageFull' }, full: true },
  { name: "MinIO's bucket quota", answer: { status: 400, code: 'XMinioAdminBucketQuotaExceeded' }, full: true },
  { name: "Ceph's quota", answer: { status: 403, code: 'QuotaExceeded' }, full: true },
  { name: 'a server fault', answer: { status: 500, code: 'InternalError' }, full: false },
  { name: 'a dropped connection', answer: 'drop' as const, full: false },
  { name: 'a plain refusal, not about room', answer: { status: 403, code: 'AccessDenied' }, full: false },
];

for (const { name, answer, full } of refusals)
  t.test(`${name}: ${full ? '507 upload_storage_full' : '502 upload_failed'}, nothing kept`, async (t) => {
    s3.refusePuts(answer);
    t.teardown(() => s3.refusePuts(null));
    const res = await upload();
    t.same(errorOf(res), full ? [507, 'upload_storage_full', null] : [502, 'upload_failed', null], res.body);
    await nothingKept(t);
  });

t.test('once the bucket takes it, the same upload is stored', async (t) => {
  s3.refusePuts({ status: 507, code: 'XMinioStorageFull' });
  t.same(errorOf(await upload()), [507, 'upload_storage_full', null]);
  s3.refusePuts(null);
  const res = await upload();
  t.equal(res.statusCode, 201, res.body);
  t.match(res.json(), { object: 'file', filename: 'report.txt', size: bytes.length });
  const list = await h.request(ws.apiKey, 'GET', '/files');
  t.same(
    list.json().data.map((f: { id: string }) => f.id),
    [res.json().id],
  );
  const content = await h.request(ws.apiKey, 'GET', `/files/${res.json().id}/content`);
  t.equal(content.statusCode, 200);
  t.ok(content.rawPayload.equals(bytes), 'the bytes come back from the bucket');
  const objects = await s3.client.send(new ListObjectsV2Command({ Bucket: s3.bucket }));
  t.equal(objects.KeyCount, 1);
});

t.test('a small upload onto a PostgreSQL out of disk is 507 too, nothing kept', async (t) => {
  // A full disk cannot be made on the shared test server; a trigger makes PostgreSQL answer the
  // small tier's insert with the error a full disk raises (disk_full, SQLSTATE 53100).
  const pool = h.system.database.pool;
  await pool.query(`CREATE FUNCTION refuse_blob() RETURNS trigger LANGUAGE plpgsql AS
    $$ BEGIN RAISE EXCEPTION 'could not extend file' USING ERRCODE = 'disk_full'; END $$;
    CREATE TRIGGER refuse_blob BEFORE INSERT ON blobs_small FOR EACH ROW EXECUTE FUNCTION refuse_blob()`);
  t.teardown(() => pool.query('DROP TRIGGER refuse_blob ON blobs_small; DROP FUNCTION refuse_blob()'));
  const before = (await h.request(ws.apiKey, 'GET', '/files')).json().data.length;
  const res = await h.request(ws.apiKey, 'POST', '/files', Buffer.from('a small note\n'), {
    'content-type': 'text/plain',
    'x-filename': 'note.txt',
  });
  t.same(errorOf(res), [507, 'upload_storage_full', null], res.body);
  t.equal((await h.request(ws.apiKey, 'GET', '/files')).json().data.length, before, 'no file is listed');
});
