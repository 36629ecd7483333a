import { Readable } from 'node:stream';
import t from 'tap';
import { type SplitMessage, splitMbox, wholeMessage } from '../../processes/mailbox-imports/split.ts';

/** The file fed in pieces of `size` bytes, as a stream would cut it. */
const pieces = (text: string, size: number) => {
  const bytes = Buffer.from(text);
  const out: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(bytes.subarray(i, i + size));
  return Readable.from(out);
};

async function split(text: string, size = 7, offset = 0, max = 1 << 20): Promise<SplitMessage[]> {
  const found: SplitMessage[] = [];
  for await (const m of splitMbox(pieces(text, size), offset, max)) found.push(m);
  return found;
}

const FILE = [
  'From a@x Mon Jan  1 00:00:00 2024',
  'Subject: one',
  '',
  '>From the start (mboxrd quoted once)',
  '>>From quoted twice',
  'From inside a paragraph stays',
  '>Fromage is not quoting',
  '',
  'From b@x Mon Jan  1 00:00:01 2024',
  'Subject: two',
  '',
  'body two',
  '',
].join('\n');

t.test('messages at From lines after a blank line, quoting undone one level, whatever the pieces', async (t) => {
  for (const size of [1, 3, 7, 1000]) {
    const found = await split(FILE, size);
    t.equal(found.length, 2, `pieces of ${size}`);
    t.equal(
      found[0]!.raw!.toString(),
      'Subject: one\n\nFrom the start (mboxrd quoted once)\n>From quoted twice\nFrom inside a paragraph stays\n>Fromage is not quoting\n',
    );
    t.equal(found[1]!.raw!.toString(), 'Subject: two\n\nbody two\n');
    t.equal(found[0]!.fromLine, 'From a@x Mon Jan  1 00:00:00 2024', 'its From line, whatever the pieces');
    t.equal(found[1]!.fromLine, 'From b@x Mon Jan  1 00:00:01 2024');
    t.equal(found[0]!.start, 0);
    t.equal(found[0]!.next, found[1]!.start);
    t.equal(found[1]!.next, Buffer.byteLength(FILE));
  }
});

t.test('from an offset (a checkpoint) the same messages follow', async (t) => {
  const all = await split(FILE);
  const second = all[1]!.start;
  const rest: SplitMessage[] = [];
  for await (const m of splitMbox(Readable.from([Buffer.from(FILE).subarray(second)]), second, 1 << 20)) rest.push(m);
  t.same(
    rest.map((m) => [m.start, m.next, m.raw!.toString()]),
    [[all[1]!.start, all[1]!.next, all[1]!.raw!.toString()]],
  );
});

t.test('a message past the limit is answered without its bytes, and the next one still comes', async (t) => {
  const big = `From a@x\nSubject: big\n\n${'x'.repeat(5000)}\n\nFrom b@x\nSubject: small\n\nok\n`;
  const found = await split(big, 64, 0, 1000);
  t.equal(found.length, 2);
  t.equal(found[0]!.raw, null);
  t.equal(found[1]!.raw!.toString(), 'Subject: small\n\nok\n');
});

t.test('CRLF files and a last line without an end', async (t) => {
  const found = await split('From a@x\r\nSubject: c\r\n\r\n>From x\r\n\r\nFrom b@x\r\nSubject: d\r\n\r\nend', 5);
  t.equal(found.length, 2);
  t.equal(found[0]!.raw!.toString(), 'Subject: c\r\n\r\nFrom x\r\n');
  t.equal(found[1]!.raw!.toString(), 'Subject: d\r\n\r\nend');
});

t.test('an .eml is one message; past the limit, none of its bytes', async (t) => {
  const one: SplitMessage[] = [];
  for await (const m of wholeMessage(pieces('Subject: e\n\nbody\n', 4), 100)) one.push(m);
  t.same(
    one.map((m) => [m.start, m.next, m.raw!.toString()]),
    [[0, 17, 'Subject: e\n\nbody\n']],
  );
  for await (const m of wholeMessage(pieces('x'.repeat(200), 50), 100)) t.equal(m.raw, null);
});
