import t from 'tap';
import { ExportZip, mboxMessage } from '../../processes/exports/archive.ts';

async function drain(output: AsyncIterable<Buffer>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of output) parts.push(part);
  return Buffer.concat(parts);
}

t.test('a failing entry ends the zip with its error, even while nobody reads the output yet', async (t) => {
  const zip = new ExportZip(new Date('2026-01-01T00:00:00Z'));
  zip.add('a.txt', async function* () {
    yield 'fine';
  });
  zip.add('b.mbox', async function* () {
    yield 'half';
    throw new Error('the raw message is missing');
  });
  zip.end();
  const uncaught: unknown[] = [];
  const note = (e: unknown) => uncaught.push(e);
  process.on('uncaughtException', note);
  t.teardown(() => void process.off('uncaughtException', note));
  // The output is read only after the entries had every chance to run and fail.
  await new Promise((r) => setTimeout(r, 50));
  t.same(uncaught, [], 'nothing escaped');
  await t.rejects(drain(zip.output), /the raw message is missing/, 'the reader still learns of it');
  t.same(
    zip.entries.map((e) => e.path),
    ['a.txt'],
    'only whole entries reach the manifest',
  );
});

t.test('mbox: From lines quoted (mboxrd), CRLF made LF, a blank line after each message', async (t) => {
  async function* raw() {
    yield Buffer.from('Subject: x\r\n\r\nFrom here\r\n>From there\r\nend');
  }
  const out = await drain(mboxMessage('From a@b Thu Jan  1 00:00:00 2026\n', raw()));
  t.equal(out.toString(), 'From a@b Thu Jan  1 00:00:00 2026\nSubject: x\n\n>From here\n>>From there\nend\n\n');
});
