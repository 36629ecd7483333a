import { randomBytes } from 'node:crypto';
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { IMAGE_BYTES_MAX } from '../../domain/templates/images.ts';
import { addDomain, errorOf, HOSTS, keyWith, startDomainsApp } from '../support/domains.ts';

const PNG = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
const image = (head: number[] | string, size = 64) => {
  const start = typeof head === 'string' ? Buffer.from(head, 'latin1') : Buffer.from(head);
  return Buffer.concat([start, randomBytes(Math.max(0, size - start.length))]);
};
const webp = () => image('RIFF\0\0\0\0WEBPVP8 ');

t.test('template images', async (t) => {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'wms-images-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const { h, dns } = await startDomainsApp(t, { dataDir });
  const ws = await h.workspace();
  const other = await h.workspace();
  const tpl = (
    await h.request(ws.apiKey, 'POST', '/templates', {
      name: 'Pictures',
      subject: 'Hi',
      document: { body: [{ kind: 'Text', text: 'x' }] },
    })
  ).json();
  const upload = (bytes: Buffer | string, key = ws.apiKey, id = tpl.id) =>
    h.request(key, 'POST', `/templates/${id}/images`, {
      content: typeof bytes === 'string' ? bytes : bytes.toString('base64'),
    });

  t.test('upload: told by the bytes, served by the url it answers', async (t) => {
    for (const [bytes, type] of [
      [image(PNG), 'image/png'],
      [image([0xff, 0xd8, 0xff, 0xe0]), 'image/jpeg'],
      [image('GIF89a'), 'image/gif'],
      [webp(), 'image/webp'],
    ] as const) {
      const res = await upload(bytes);
      t.equal(res.statusCode, 201, res.body);
      t.match(res.json(), {
        object: 'template_image',
        templateId: tpl.id,
        contentType: type,
        size: bytes.length,
        url: /^https:\/\/localhost\/template-images\/[0-9a-f]{64}-[\w-]{22}\.(png|jpg|gif|webp)$/,
      });
      const served = await h.app.inject({ method: 'GET', url: new URL(res.json().url).pathname });
      t.equal(served.statusCode, 200);
      t.equal(served.headers['content-type'], type);
      t.equal(served.headers['x-content-type-options'], 'nosniff');
      t.ok(served.rawPayload.equals(bytes), 'the same bytes');
    }
    const png = image(PNG);
    const first = (await upload(png)).json();
    t.equal((await upload(png)).json().url, first.url, 'the same bytes, the same url');
    const pathname = new URL(first.url).pathname;
    const forged = pathname.replace(/-[\w-]{22}\./, `-${'A'.repeat(22)}.`);
    t.equal((await h.app.inject({ method: 'GET', url: forged })).statusCode, 404, 'a name without its MAC');
    const asGif = pathname.replace(/\.png$/, '.gif');
    t.equal((await h.app.inject({ method: 'GET', url: asGif })).statusCode, 404, 'another kind');
  });

  t.test('upload: refusals and limits', async (t) => {
    t.same(errorOf(await upload(Buffer.from('hello, not an image'))), [422, 'invalid_parameter', 'content']);
    t.same(errorOf(await upload('not base64!')), [422, 'invalid_parameter', 'content']);
    t.same(errorOf(await upload('')), [422, 'invalid_parameter', 'content']);
    t.same(errorOf(await h.request(ws.apiKey, 'POST', `/templates/${tpl.id}/images`, { content: 'iVBO', x: 1 })), [
      422,
      'unknown_parameter',
      'x',
    ]);
    const edge = await upload(image(PNG, IMAGE_BYTES_MAX));
    t.equal(edge.statusCode, 201, 'at the limit');
    t.equal(edge.json().size, IMAGE_BYTES_MAX);
    t.same(errorOf(await upload(image(PNG, IMAGE_BYTES_MAX + 1))), [422, 'invalid_parameter', 'content']);
    t.same(errorOf(await upload(image(PNG), other.apiKey)), [404, 'resource_not_found', 'id'], "another workspace's");
    const reader = await keyWith(h, ws.apiKey, { scopes: ['templates:read'] });
    t.same(errorOf(await upload(image(PNG), reader)), [403, 'insufficient_scope', null]);
  });

  t.test("served from the domain's storage host once it is active", async (t) => {
    const d = await addDomain(h, ws.apiKey, 'pics.com');
    const patched = await h.request(ws.apiKey, 'PATCH', `/domains/${d.id}`, { storage: { host: 'files.pics.com' } });
    t.equal(patched.json().storage.status, 'pending');
    t.match((await upload(image(PNG))).json().url, /^https:\/\/localhost\//, 'pending: ours');
    dns.set('files.pics.com', { CNAME: HOSTS.storage });
    const verified = await h.request(ws.apiKey, 'POST', `/domains/${d.id}/verify`);
    t.equal(verified.json().storage.status, 'active');
    const res = await upload(image(PNG));
    t.match(res.json().url, /^https:\/\/files\.pics\.com\/template-images\//);
    const served = await h.app.inject({
      method: 'GET',
      url: new URL(res.json().url).pathname,
      headers: { host: 'files.pics.com' },
    });
    t.equal(served.statusCode, 200);
  });

  t.test('502 image_not_stored when the blob store fails', async (t) => {
    // A large image goes to files: the store's folder becomes a file, as on a full or broken disk.
    const blobs = path.join(dataDir, 'blobs');
    await rename(blobs, `${blobs}.away`);
    await writeFile(blobs, 'not a folder');
    try {
      t.same(errorOf(await upload(image(PNG, 300 * 1024))), [502, 'image_not_stored', null]);
    } finally {
      await rm(blobs);
      await rename(`${blobs}.away`, blobs);
    }
    // A small one is a row of PostgreSQL (infra/blobs/postgres.ts): its table gone, the insert fails.
    await h.system.database.pool.query('ALTER TABLE blobs_small RENAME TO blobs_small_away');
    try {
      t.same(errorOf(await upload(image(PNG))), [502, 'image_not_stored', null]);
    } finally {
      await h.system.database.pool.query('ALTER TABLE blobs_small_away RENAME TO blobs_small');
    }
    t.equal((await upload(image(PNG))).statusCode, 201, 'stored again once the store is back');
  });
});
