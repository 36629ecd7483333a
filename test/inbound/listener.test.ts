import { mkdtemp, readdir, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buffer } from 'node:stream/consumers';
import MailComposer from 'nodemailer/lib/mail-composer';
import SMTPConnection from 'nodemailer/lib/smtp-connection';
import { createTransport } from 'nodemailer';
import t, { type Test } from 'tap';
import { FileBlobStore } from '../../infra/blobs/files.ts';
import type { BlobStore } from '../../infra/blobs/port.ts';
import { InboundListener, type InboundListenerOptions } from '../../infra/inbound/listener.ts';
import type { DeliveryVerdict, InboundMessage, RecipientVerdict } from '../../infra/inbound/port.ts';

const root = await mkdtemp(path.join(tmpdir(), 'wms-inbound-'));
const LIMIT = 64 * 1024;

interface Mailbox {
  id: string;
}

/**
 * The listener with a policy that knows three mailboxes of ours.test, a handler that keeps what
 * it is handed and answers as `verdict` says, and a file blob store of its own.
 */
async function listen(
  t: Test,
  options: Partial<InboundListenerOptions<Mailbox>> & {
    verdict?: (m: InboundMessage<Mailbox>) => DeliveryVerdict;
  } = {},
) {
  const dir = await mkdtemp(path.join(root, 'blobs-'));
  const blobs: BlobStore = options.blobs ?? new FileBlobStore({ dir });
  const received: { message: InboundMessage<Mailbox>; raw: Buffer }[] = [];
  const errors: string[] = [];
  const asked: string[] = [];
  const mailboxes: Record<string, string> = { 'ann@ours.test': 'mbx_ann', 'bob@ours.test': 'mbx_bob' };
  const listener = await InboundListener.start<Mailbox>({
    port: 0,
    host: '127.0.0.1',
    hostname: 'mx.ours.test',
    maxMessageBytes: LIMIT,
    blobs,
    policy: {
      async accept({ address }): Promise<RecipientVerdict<Mailbox>> {
        asked.push(address);
        const local = address.toLowerCase();
        if (local === 'broken@ours.test') throw new Error('read model away');
        if (local === 'busy@ours.test') return { accept: false, code: 450, message: 'Mailbox busy, try later' };
        if (local.startsWith('many')) return { accept: true, recipient: { id: `mbx_${local}` } };
        const id = mailboxes[local];
        return id ? { accept: true, recipient: { id } } : { accept: false, code: 550, message: 'No such mailbox here' };
      },
    },
    handler: {
      async receive(message) {
        received.push({ message, raw: await buffer(await message.open()) });
        return options.verdict?.(message) ?? { accept: true };
      },
    },
    onError: (_error, context) => errors.push(context),
    ...options,
  });
  t.teardown(() => listener.close());
  return { listener, dir, blobs, received, errors, asked };
}

async function compose(extra: Record<string, unknown> = {}): Promise<Buffer> {
  return new MailComposer({
    from: 'Carol <carol@outside.test>',
    to: 'ann@ours.test',
    subject: 'Lunch?',
    text: 'Shall we?\r\n.\r\nA line with a lone dot above, stuffed on the wire.\r\n',
    messageId: '<lunch-1@outside.test>',
    date: new Date('2026-11-20T12:00:00Z'),
    ...extra,
  })
    .compile()
    .build();
}

function transport(port: number, pool = false) {
  return createTransport({ host: '127.0.0.1', port, ignoreTLS: true, pool, maxMessages: Infinity });
}

/** A plain conversation over a socket: each line sent, each reply read whole. */
async function converse(port: number, lines: string[]): Promise<string[]> {
  const socket = net.connect(port, '127.0.0.1');
  const replies: string[] = [];
  let pending = '';
  const next = () =>
    new Promise<string>((resolve) => {
      const look = () => {
        const match = /(?:^|\r\n)(\d{3}) [^\r\n]*\r\n/.exec(pending);
        if (!match)
          return socket.once('data', (d) => {
            pending += d.toString('latin1');
            look();
          });
        const end = match.index + match[0].length;
        resolve(pending.slice(0, end));
        pending = pending.slice(end);
      };
      look();
    });
  replies.push(await next());
  for (const line of lines) {
    socket.write(`${line}\r\n`);
    if (line.endsWith('\r\n.') || !line.includes('\r\n')) replies.push(await next());
  }
  socket.destroy();
  return replies;
}

t.test('a message for mailboxes of ours is stored with our trace lines and handed over', async (t) => {
  const { listener, received, blobs, asked } = await listen(t);
  const raw = await compose({ to: 'ann@ours.test, Bob <bob@ours.test>' });
  const info = await transport(listener.port).sendMail({
    envelope: { from: 'carol@outside.test', to: ['ann@ours.test', 'BOB@ours.test'] },
    raw,
  });
  t.same(info.accepted, ['ann@ours.test', 'BOB@ours.test']);
  t.match(info.response, /^250 2\.6\.0 /);
  t.same(asked, ['ann@ours.test', 'BOB@ours.test']);

  t.equal(received.length, 1);
  const { message, raw: handed } = received[0]!;
  t.same(message.recipients, [
    { address: 'ann@ours.test', recipient: { id: 'mbx_ann' } },
    { address: 'BOB@ours.test', recipient: { id: 'mbx_bob' } },
  ]);
  t.equal(message.mailFrom, 'carol@outside.test');
  t.same(message.client, { address: '127.0.0.1', helo: message.client.helo, secure: false });
  t.ok(message.client.helo.length > 0, 'the HELO name is kept');

  const stored = await blobs.get(message.blob.sha256);
  t.ok(stored?.equals(handed), 'the handler reads the stored bytes');
  t.equal(message.blob.size, stored?.length);
  const text = stored!.toString('latin1');
  const trace = text.slice(0, text.length - raw.length);
  t.match(
    trace,
    new RegExp(
      `^Return-Path: <carol@outside\\.test>\\r\\nReceived: from \\S+ \\(\\[127\\.0\\.0\\.1\\]\\)\\r\\n\\tby mx\\.ours\\.test with ESMTP id ${message.id.replace('.', '\\.')};\\r\\n\\t\\w{3}, \\d{1,2} \\w{3} \\d{4} \\d\\d:\\d\\d:\\d\\d \\+0000\\r\\n$`,
    ),
    'Return-Path, then Received without a for clause (two recipients)',
  );
  t.ok(stored!.subarray(stored!.length - raw.length).equals(raw), 'then the bytes sent, the stuffed dot restored');
});

t.test('one recipient is named in the Received line; the null sender is an empty Return-Path', async (t) => {
  const { listener, received } = await listen(t);
  await transport(listener.port).sendMail({ envelope: { from: '', to: ['ann@ours.test'] }, raw: await compose() });
  const stored = received[0]!.raw.toString('latin1');
  t.match(stored, /^Return-Path: <>\r\n/);
  t.match(stored, /\r\n\tfor <ann@ours\.test>;\r\n/);
  t.equal(received[0]!.message.mailFrom, '');
});

t.test('recipients the policy refuses are answered at RCPT; the others still get the message', async (t) => {
  const { listener, received } = await listen(t);
  const info = await transport(listener.port).sendMail({
    envelope: { from: 'carol@outside.test', to: ['ann@ours.test', 'nobody@ours.test', 'busy@ours.test'] },
    raw: await compose(),
  });
  t.same(info.accepted, ['ann@ours.test']);
  t.same(info.rejected, ['nobody@ours.test', 'busy@ours.test']);
  const errors = (info as unknown as { rejectedErrors: { response: string }[] }).rejectedErrors;
  t.match(errors[0]?.response, /^550 5\.1\.1 No such mailbox here/);
  t.match(errors[1]?.response, /^450 4\.2\.1 Mailbox busy, try later/);
  t.same(
    received[0]!.message.recipients.map((r) => r.address),
    ['ann@ours.test'],
  );
});

t.test('no recipient taken: the transaction fails at RCPT and nothing is stored', async (t) => {
  const { listener, received, dir } = await listen(t);
  await t.rejects(
    transport(listener.port).sendMail({
      envelope: { from: 'carol@outside.test', to: ['nobody@ours.test'] },
      raw: await compose(),
    }),
    { code: 'EENVELOPE', responseCode: 550 },
  );
  t.equal(received.length, 0);
  t.same(
    (await readdir(dir)).filter((f) => f !== 'tmp'),
    [],
  );
});

t.test('a policy that fails answers 451 (try again), never a permanent refusal', async (t) => {
  const { listener, errors } = await listen(t);
  await t.rejects(
    transport(listener.port).sendMail({
      envelope: { from: 'carol@outside.test', to: ['broken@ours.test'] },
      raw: await compose(),
    }),
    { code: 'EENVELOPE', responseCode: 451 },
  );
  t.same(errors, ['recipient broken@ours.test']);
});

t.test("the handler's verdict is the answer to DATA; a handler that fails is 451", async (t) => {
  const refusing = await listen(t, {
    verdict: () => ({ accept: false, code: 550, message: 'Refused by a rule of the mailbox' }),
  });
  await t.rejects(
    transport(refusing.listener.port).sendMail({
      envelope: { from: 'carol@outside.test', to: ['ann@ours.test'] },
      raw: await compose(),
    }),
    { code: 'EMESSAGE', responseCode: 550, response: /^550 5\.1\.1 Refused by a rule of the mailbox/ },
  );
  const failing = await listen(t, {
    verdict: () => {
      throw new Error('event store away');
    },
  });
  await t.rejects(
    transport(failing.listener.port).sendMail({
      envelope: { from: 'carol@outside.test', to: ['ann@ours.test'] },
      raw: await compose(),
    }),
    { code: 'EMESSAGE', responseCode: 451, response: /^451 4\.3\.0 Local error in processing, try again later/ },
  );
  t.match(failing.errors, [/^handling message /]);
});

t.test('SIZE is advertised; a declared size over it is refused at MAIL FROM', async (t) => {
  const { listener, received } = await listen(t);
  const [, ehlo, mail] = await converse(listener.port, [
    'EHLO client.outside.test',
    `MAIL FROM:<carol@outside.test> SIZE=${LIMIT + 1}`,
  ]);
  t.match(ehlo, new RegExp(`\\r\\n250[- ]SIZE ${LIMIT}\\r\\n`));
  t.notMatch(ehlo, /AUTH/, 'no AUTH on an MX');
  t.match(mail, /^552 /);
  const [, , ok] = await converse(listener.port, [
    'EHLO client.outside.test',
    `MAIL FROM:<carol@outside.test> SIZE=${LIMIT}`,
  ]);
  t.match(ok, /^250 /, 'the limit itself is fine');
  t.equal(received.length, 0);
});

t.test('a message over the limit is refused 552 after DATA and nothing of it is stored', async (t) => {
  const { listener, received, dir } = await listen(t);
  const send = (bytes: Buffer) =>
    new Promise<{ response: string }>((resolve, reject) => {
      const connection = new SMTPConnection({ host: '127.0.0.1', port: listener.port, ignoreTLS: true });
      connection.on('error', reject);
      connection.connect(() =>
        // No `size` in the envelope: the client does not declare one, the server counts.
        connection.send({ from: 'carol@outside.test', to: ['ann@ours.test'] }, bytes, (error, info) => {
          connection.quit();
          if (error) reject(error);
          else resolve(info);
        }),
      );
    });
  const base = await compose();
  // The bytes counted are the message's after the stuffed dot is taken out again.
  const filler = (n: number) =>
    Buffer.concat([base.subarray(0, base.length - 2), Buffer.alloc(n - base.length, 'x'), Buffer.from('\r\n')]);
  const atLimit = filler(LIMIT);
  t.equal(atLimit.length, LIMIT);
  const accepted = await send(atLimit);
  t.match(accepted.response, /^250 /, 'exactly the limit is taken');
  await t.rejects(
    send(filler(LIMIT + 1)),
    { code: 'EMESSAGE', responseCode: 552, response: /^552 5\.3\.4 / },
    'one byte more is not',
  );
  await t.rejects(send(filler(LIMIT * 4)), { code: 'EMESSAGE', responseCode: 552 }, 'nor a lot more');
  t.equal(received.length, 1, 'only the message at the limit reached the handler');
  t.equal((await readdir(path.join(dir, 'tmp'))).length, 0, 'no partial file is left');
  const stored = await Promise.all(
    (await readdir(dir)).filter((f) => f !== 'tmp').map((f) => readdir(path.join(dir, f), { recursive: true })),
  );
  t.equal(stored.flat().filter((f) => f.length > 10).length, 1, 'one blob: the accepted message');
});

t.test('a message larger than the memory copy is read back from the store', async (t) => {
  const { listener, received } = await listen(t, { memoryBytes: 1024 });
  const raw = await compose({ text: 'long line of text\r\n'.repeat(500) });
  await transport(listener.port).sendMail({ envelope: { from: 'carol@outside.test', to: ['ann@ours.test'] }, raw });
  const { message, raw: handed } = received[0]!;
  t.ok(handed.subarray(handed.length - raw.length).equals(raw));
  t.equal(handed.length, message.blob.size);
});

t.test('a store that cannot write answers 451 and the client keeps the message', async (t) => {
  const notAFolder = path.join(root, 'a-file');
  await writeFile(notAFolder, 'in the way');
  const { listener, received, errors } = await listen(t, { blobs: new FileBlobStore({ dir: notAFolder }) });
  await t.rejects(
    transport(listener.port).sendMail({
      envelope: { from: 'carol@outside.test', to: ['ann@ours.test'] },
      raw: await compose(),
    }),
    { code: 'EMESSAGE', responseCode: 451 },
  );
  t.equal(received.length, 0);
  t.match(errors, [/^storing message /]);
});

t.test('recipients past 100 in one transaction are answered 452', async (t) => {
  const { listener, received } = await listen(t);
  const to = Array.from({ length: 101 }, (_, i) => `many${i}@ours.test`);
  const info = await transport(listener.port).sendMail({
    envelope: { from: 'carol@outside.test', to },
    raw: await compose(),
  });
  t.equal(info.accepted.length, 100);
  t.same(info.rejected, ['many100@ours.test']);
  t.match((info as unknown as { rejectedErrors: { response: string }[] }).rejectedErrors[0]?.response, /^452 4\.5\.3 /);
  t.equal(received[0]?.message.recipients.length, 100);
});

t.test('one session carries many messages (no unauthenticated-command limit on an MX)', async (t) => {
  const { listener, received } = await listen(t);
  const pooled = createTransport({
    host: '127.0.0.1',
    port: listener.port,
    ignoreTLS: true,
    pool: true,
    maxConnections: 1,
    maxMessages: Infinity,
  });
  t.teardown(() => pooled.close());
  for (let i = 0; i < 15; i++)
    await pooled.sendMail({
      envelope: { from: 'carol@outside.test', to: ['ann@ours.test'] },
      raw: await compose({ subject: `n${i}` }),
    });
  t.equal(received.length, 15);
  t.equal(new Set(received.map((r) => r.message.id.split('.')[0])).size, 1, 'one session');
  t.equal(new Set(received.map((r) => r.message.id)).size, 15, 'a queue id per message');
});
