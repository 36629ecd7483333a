import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { ArchiveReader } from '../../infra/imports/archives.ts';
import { FileImportStorage } from '../../infra/imports/files.ts';
import { tgz, zip } from '../support/archives.ts';
import { mbox } from '../support/imports.ts';

/**
 * A takeout is often one archive holding one mbox of gigabytes: the import's `processedBytes`
 * comes from the member's position, which must move as the member unpacks, not only between
 * members. Real archives on a real file store, read as the import reads them.
 */
const root = await mkdtemp(path.join(os.tmpdir(), 'wms-archive-position-'));
t.teardown(() => rm(root, { recursive: true, force: true }));
const storage = new FileImportStorage(root);
const reader = new ArchiveReader(storage);
const CHUNK = 64 * 1024;

// About 2 MB of bodies that do not compress, so the upload is read part after part as it unpacks.
const content = mbox(
  Array.from({ length: 500 }, (_, i) => ({
    id: `packed-${i}@outside.test`,
    subject: `packed ${i}`,
    body: randomBytes(3000).toString('base64').replace(/.{76}/g, '$&\n'),
  })),
);

for (const [format, upload] of [
  ['tgz', await tgz([{ name: 'Takeout/Mail/All mail.mbox', data: content }])],
  ['zip', zip([{ name: 'Takeout/Mail/All mail.mbox', data: content }])],
] as const) {
  t.test(`one mbox in a ${format}: the position moves as it unpacks`, async (t) => {
    const importId = `imp_${randomBytes(12).toString('hex')}`;
    const chunks = Math.ceil(upload.length / CHUNK);
    for (let c = 0; c < chunks; c++) {
      const part = upload.subarray(c * CHUNK, (c + 1) * CHUNK);
      await storage.putChunk(importId, 0, c, part.length, part);
    }
    const seen: number[] = [];
    let unpacked = 0;
    for await (const member of reader.members(
      { importId, file: 0, bytes: upload.length, chunks, chunkBytes: CHUNK, format },
      [],
    )) {
      for await (const data of member.content) {
        unpacked += data.length;
        seen.push(member.position());
      }
    }
    t.equal(unpacked, content.length, 'the whole mbox unpacked');
    t.ok(seen[0]! < upload.length / 4, `at the start: ${seen[0]} of ${upload.length}`);
    const middle = seen[Math.floor(seen.length / 2)]!;
    t.ok(middle > upload.length / 4 && middle < (upload.length * 3) / 4, `half way: ${middle} of ${upload.length}`);
    t.ok(seen.at(-1)! <= upload.length, 'never past the upload');
    t.same(
      seen,
      [...seen].sort((a, b) => a - b),
      'never backwards',
    );
  });
}
