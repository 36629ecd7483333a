import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import MailComposer from 'nodemailer/lib/mail-composer';
import t from 'tap';
import { firstChars, MessageSummary, messageIds, snippetOf } from '../../domain/messages/summary.ts';
import { FileBlobStore } from '../../infra/blobs/files.ts';
import { parseMessage } from '../../infra/inbound/summary.ts';

const blobs = new FileBlobStore({ dir: await mkdtemp(path.join(tmpdir(), 'wms-summary-')) });
const sha = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

const pdf = randomBytes(300 * 1024);
const png = randomBytes(2048);
const MARKER = 'ONLY-IN-THE-BODY-7f3a';

async function rich(): Promise<Buffer> {
  return new MailComposer({
    from: '"Zoë Müller" <zoe@outside.test>',
    to: 'Ann <ann@ours.test>, team: bob@ours.test, carol@ours.test;',
    cc: 'dave@elsewhere.test',
    replyTo: 'replies@outside.test',
    subject: 'Angebot für das Frühjahr — Entwurf',
    messageId: '<offer-2@outside.test>',
    inReplyTo: '<offer-1@ours.test>',
    references: ['<start@outside.test>', '<offer-1@ours.test>'],
    date: new Date('2026-11-20T09:30:00Z'),
    headers: {
      'List-Id': 'Offers <offers.outside.test>',
      'Auto-Submitted': 'no',
      'DKIM-Signature': `v=1; a=rsa-sha256; d=outside.test; s=s1; b=${'A'.repeat(300)}`,
    },
    text: `Hello Ann,\n\n   here   is the\tdraft offer.\n${'Filler sentence for length. '.repeat(40)}${MARKER}\n`,
    html: `<p>Hello Ann, here is the draft offer.</p><img src="cid:logo@outside"><p>${MARKER}</p>`,
    attachments: [
      { filename: 'Angebot 2026.pdf', content: pdf, contentType: 'application/pdf' },
      { filename: 'logo.png', content: png, contentType: 'image/png', cid: 'logo@outside' },
    ],
  })
    .compile()
    .build();
}

t.test('the summary: ids, addresses, subject, snippet, headers and attachments, never the body', async (t) => {
  const raw = await rich();
  const { summary, searchText } = await parseMessage(blobs, raw, raw.length);
  t.same(MessageSummary.parse(summary), summary, 'it is what the schema says');
  t.equal(summary.messageId, 'offer-2@outside.test');
  t.same(summary.inReplyTo, ['offer-1@ours.test']);
  t.same(summary.references, ['start@outside.test', 'offer-1@ours.test']);
  t.equal(summary.date, '2026-11-20T09:30:00.000Z');
  t.equal(summary.subject, 'Angebot für das Frühjahr — Entwurf');
  t.same(summary.from, { name: 'Zoë Müller', address: 'zoe@outside.test' });
  t.same(
    summary.to,
    [
      { name: 'Ann', address: 'ann@ours.test' },
      { name: null, address: 'bob@ours.test' },
      { name: null, address: 'carol@ours.test' },
    ],
    'a group is its members',
  );
  t.same(summary.cc, [{ name: null, address: 'dave@elsewhere.test' }]);
  t.same(summary.replyTo, [{ name: null, address: 'replies@outside.test' }]);
  t.same(summary.bcc, []);
  t.equal(summary.size, raw.length);

  t.match(summary.snippet, /^Hello Ann, here is the draft offer\. Filler sentence/);
  t.ok(Array.from(summary.snippet).length <= 200);
  t.match(summary.snippet, /…$/);

  const names = summary.headers.map((h) => h.name.toLowerCase());
  t.ok(names.includes('list-id') && names.includes('auto-submitted'), 'headers rules look at are there');
  t.notOk(names.includes('dkim-signature'), 'signatures are left out');
  t.same(
    summary.headers.find((h) => h.name === 'Subject'),
    { name: 'Subject', value: 'Angebot für das Frühjahr — Entwurf' },
    'decoded',
  );
  t.equal(summary.headersTruncated, false);

  // In the message's MIME order: the image sits in multipart/related beside the HTML, the PDF after.
  t.same(summary.attachments, [
    {
      filename: 'logo.png',
      contentType: 'image/png',
      size: png.length,
      sha256: sha(png),
      contentId: 'logo@outside',
      inline: true,
    },
    {
      filename: 'Angebot 2026.pdf',
      contentType: 'application/pdf',
      size: pdf.length,
      sha256: sha(pdf),
      contentId: null,
      inline: false,
    },
  ]);
  t.ok((await blobs.get(sha(pdf)))?.equals(pdf), 'each attachment is in the blob store, decoded');
  t.ok((await blobs.get(sha(png)))?.equals(png));

  t.notOk(JSON.stringify(summary).includes(MARKER), 'nothing past the snippet is in the summary');
  t.ok(searchText.includes(MARKER), 'the text is there for a search index');
});

t.test('a stream parses as the bytes do', async (t) => {
  const raw = await rich();
  const fromBytes = await parseMessage(blobs, raw, raw.length);
  const chunks = Array.from({ length: Math.ceil(raw.length / 1000) }, (_, i) => raw.subarray(i * 1000, (i + 1) * 1000));
  t.same(await parseMessage(blobs, Readable.from(chunks), raw.length), fromBytes);
});

t.test('an HTML-only message gets its snippet from the HTML', async (t) => {
  const raw = await new MailComposer({
    from: 'a@outside.test',
    to: 'ann@ours.test',
    subject: 'Newsletter',
    html: '<html><head><style>p{color:red}</style></head><body><h1>Spring</h1><p>New   things <b>arrived</b>.</p></body></html>',
  })
    .compile()
    .build();
  const { summary } = await parseMessage(blobs, raw, raw.length);
  t.match(summary.snippet, /^SPRING New things arrived\.$/i);
  t.same(summary.attachments, []);
});

t.test('what a message lacks is null or empty, never made up', async (t) => {
  const raw = Buffer.from('From: someone\r\nSubject:\r\nIn-Reply-To: bare-id@host\r\n\r\nhi\r\n');
  const { summary } = await parseMessage(blobs, raw, raw.length);
  t.equal(summary.messageId, null);
  t.equal(summary.date, null);
  t.equal(summary.subject, '');
  t.equal(summary.from, null, 'no address in From');
  t.same(summary.inReplyTo, ['bare-id@host'], 'an id without brackets is still read');
  t.same(summary.references, []);
  t.equal(summary.snippet, 'hi');
});

t.test('header fields are bounded: 100 fields, 16 KiB, 998 characters a value', async (t) => {
  const many = Array.from({ length: 150 }, (_, i) => `X-Field-${i}: value ${i}`).join('\r\n');
  const raw = Buffer.from(`From: a@outside.test\r\n${many}\r\nX-Long: ${'y'.repeat(2000)}\r\n\r\nbody\r\n`);
  const { summary } = await parseMessage(blobs, raw, raw.length);
  t.equal(summary.headers.length, 100);
  t.equal(summary.headersTruncated, true);
  const long = Buffer.from(`From: a@outside.test\r\nX-Long: ${'y'.repeat(2000)}\r\n\r\nbody\r\n`);
  const cut = (await parseMessage(blobs, long, long.length)).summary;
  t.equal(cut.headers.find((h) => h.name === 'X-Long')?.value.length, 998);
  t.equal(cut.headersTruncated, true);
});

t.test('messageIds and snippetOf', async (t) => {
  t.same(messageIds('<a@x> <b@y>  <a@x>'), ['a@x', 'b@y'], 'in order, once each');
  t.same(messageIds(['<a@x>', '<b@y>']), ['a@x', 'b@y']);
  t.same(messageIds('(comment) <a@x>'), ['a@x']);
  t.same(messageIds('two words'), [], 'not an id');
  t.same(messageIds(undefined), []);
  t.equal(snippetOf('  a\n\n b\t c  '), 'a b c');
  t.equal(snippetOf('é'.repeat(300)).length, 200, 'characters, not bytes');
  t.equal(snippetOf('😀'.repeat(300)), `${'😀'.repeat(199)}…`, 'never half a character');
});

t.test('a long text: the snippet and the first characters are what the whole text gives', async (t) => {
  // Read off the head of the text: the same as splitting the whole into characters, wherever the
  // head's cut falls (inside a white-space run, between the halves of a surrogate pair).
  const whole = (text: string, max: number) => {
    const chars = Array.from(text.replace(/\s+/g, ' ').trim());
    return chars.length <= max
      ? chars.join('')
      : `${chars
          .slice(0, max - 1)
          .join('')
          .trimEnd()}…`;
  };
  for (const text of [
    `${'a '.repeat(399)}${' '.repeat(50)}tail`,
    `${'😀'.repeat(150)}x${'😀'.repeat(400)}`,
    `x${'😀 \n'.repeat(600)}`,
    `${'word\t\t'.repeat(30)}${'\n'.repeat(900)}end`,
  ]) {
    t.equal(snippetOf(text), whole(text, 200));
    t.equal(snippetOf(text, 10), whole(text, 10));
  }
  t.equal(firstChars('abc', 3), 'abc');
  t.equal(firstChars(`x${'😀'.repeat(5)}`, 3), 'x😀😀', 'characters, not UTF-16 units');
  t.equal(firstChars('😀'.repeat(5), 5), '😀'.repeat(5), 'all of it, twice as many units');
  t.equal(firstChars('😀'.repeat(5), 2), '😀😀', 'never half a character');
});
