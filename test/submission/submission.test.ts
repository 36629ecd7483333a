import os from 'node:os';
import nodemailer from 'nodemailer';
import type SMTPTransport from 'nodemailer/lib/smtp-transport';
import t from 'tap';
import { startSubmission } from '../../system.ts';
import { storedMessage, startSendingApp } from '../support/emails.ts';

/** Live sends the workspace may make this month: the last subtest spends what is left. */
const ALLOWANCE = 6;
const LIMIT = 64 * 1024;

/** An address of this machine that is not loopback: a client there is "off loopback". */
const outsideAddress = Object.values(os.networkInterfaces())
  .flat()
  .find((i) => i && i.family === 'IPv4' && !i.internal)?.address;

t.test('SMTP submission with nodemailer as the mail client', async (t) => {
  const { h, setUp } = await startSendingApp(t, { sending: { monthlyAllowance: ALLOWANCE } });
  const setUpResult = await setUp('example.com');
  const { ws, a } = setUpResult;
  const created = await h.request(ws.apiKey, 'POST', `/addresses/${a.id}/app-passwords`, { name: 'Laptop' });
  t.equal(created.statusCode, 201, 'an app password for a@');
  const password: string = created.json().password;
  const errors: unknown[] = [];
  const listen = async (host: string) => {
    const listener = await startSubmission(h.system, {
      port: 0,
      host,
      hostname: 'mail.example.net',
      maxMessageBytes: LIMIT,
      onError: (e) => errors.push(e),
    });
    t.teardown(() => listener.close());
    return listener;
  };
  const local = await listen('127.0.0.1');
  const client = (options: SMTPTransport.Options = {}) =>
    nodemailer.createTransport({
      host: '127.0.0.1',
      port: local.port,
      auth: { user: 'a@example.com', pass: password },
      // smtp-server's built-in certificate is self-signed.
      tls: { rejectUnauthorized: false },
      ...options,
    });
  const refusal = async (sending: Promise<unknown>) => {
    const error = (await sending.then(
      () => null,
      (e: unknown) => e,
    )) as { responseCode?: number; response?: string } | null;
    return error && [error.responseCode, /^\d{3} (\d\.\d+\.\d+)/.exec(error.response ?? '')?.[1]];
  };
  const emails = async () =>
    (await h.request(ws.apiKey, 'GET', '/emails?limit=100')).json().data as {
      id: string;
      source: string;
      subject: string;
    }[];

  t.test('a good login sends over STARTTLS: bcc kept out of the headers, the email listed', async (t) => {
    const info = await client({ requireTLS: true }).sendMail({
      from: 'Jane <A@example.com>',
      to: 'Ann <ann@example.org>',
      cc: 'bob@example.org',
      bcc: 'secret@example.org',
      subject: 'From my mail client',
      text: 'Hello there',
      html: '<p>Hello <b>there</b></p>',
      attachments: [{ filename: 'notes.txt', content: 'the notes' }],
    });
    t.same(info.accepted.sort(), ['ann@example.org', 'bob@example.org', 'secret@example.org']);
    const id = /queued as (em_[0-9a-f]{24})/.exec(info.response)?.[1];
    t.ok(id, `the reply names the email: ${info.response}`);
    const read = (await h.request(ws.apiKey, 'GET', `/emails/${id}`)).json();
    t.match(read, {
      id,
      source: 'submission',
      mode: 'live',
      from: { address: 'a@example.com', name: 'Jane' },
      subject: 'From my mail client',
      recipients: [
        { email: 'ann@example.org', kind: 'to', status: 'queued' },
        { email: 'bob@example.org', kind: 'cc', status: 'queued' },
        { email: 'secret@example.org', kind: 'bcc', status: 'queued' },
      ],
    });
    t.ok(
      (await emails()).some((e) => e.id === id && e.source === 'submission'),
      'GET /emails lists it',
    );
    const stored = await storedMessage(h, id!, ws.workspaceId);
    t.notOk(stored.headers.has('bcc'), 'no Bcc header');
    t.notOk(
      stored.headerLines.some((l) => l.line.includes('secret@example.org')),
      'the bcc nowhere in the headers',
    );
    t.equal(stored.text?.trim(), 'Hello there');
    t.match(stored.html, /Hello <b>there<\/b>/);
    t.same(
      stored.attachments.map((x) => [x.filename, x.content.toString()]),
      [['notes.txt', 'the notes']],
    );
    const events = await h.system.store.readStream(`ws-${ws.workspaceId}.email-${id}`);
    t.match(events[0]!.metadata, { actor: { kind: 'address', id: a.id } }, 'the address is the actor');
  });

  t.test('refusals: wrong password, another sender, the size limit', async (t) => {
    const before = (await emails()).length;
    t.same(await refusal(client({ auth: { user: 'a@example.com', pass: 'aaaa bbbb cccc dddd' } }).verify()), [
      535,
      '5.7.8',
    ]);
    t.same(await refusal(client({ auth: { user: 'nobody@example.com', pass: password } }).verify()), [535, '5.7.8']);
    t.same(
      await refusal(
        client().sendMail({
          envelope: { from: 'b@example.com', to: ['ann@example.org'] },
          from: 'b@example.com',
          subject: 'x',
          text: 'x',
        }),
      ),
      [550, '5.7.1'],
      'MAIL FROM of another address',
    );
    t.same(
      await refusal(
        client().sendMail({
          envelope: { from: 'a@example.com', to: ['ann@example.org'] },
          from: 'b@example.com',
          subject: 'x',
          text: 'x',
        }),
      ),
      [550, '5.7.1'],
      'a From header of another address: from_address_forbidden',
    );
    const message = (bytes: number) => ({
      from: 'a@example.com',
      to: 'ann@example.org',
      subject: 'Big',
      // Short lines, so the body goes as it is (7bit), not encoded larger.
      text: `${'x'.repeat(75)}\n`.repeat(Math.ceil(bytes / 76)),
    });
    t.same(await refusal(client().sendMail(message(LIMIT + 1024))), [552, undefined], 'past the size limit');
    t.same(
      await refusal(client().sendMail({ from: 'a@example.com', to: 'ann@example.org', text: 'no subject' })),
      [554, '5.6.0'],
      'what the API refuses as invalid is refused for the message',
    );
    t.equal((await emails()).length, before, 'nothing was sent');
    const justUnder = await client().sendMail(message(LIMIT - 2048));
    t.match(justUnder.response, /^250 /, 'just under the limit it goes');
  });

  t.test('a custom username logs in; a disabled address may log in but not send', async (t) => {
    const { b, off } = setUpResult;
    t.equal((await h.request(ws.apiKey, 'PUT', `/addresses/${b.id}/login`, { username: 'bee.work' })).statusCode, 200);
    const passwordOf = async (id: string) =>
      (await h.request(ws.apiKey, 'POST', `/addresses/${id}/app-passwords`, { name: 'Phone' })).json()
        .password as string;
    const bee = await client({ auth: { user: 'Bee.Work', pass: await passwordOf(b.id) } }).sendMail({
      from: 'b@example.com',
      to: 'ann@example.org',
      subject: 'as bee',
      text: 'x',
    });
    t.match(bee.response, /^250 /, 'the custom name, in any case');
    const offPassword = await passwordOf(off.id);
    t.same(
      await refusal(
        client({ auth: { user: 'off@example.com', pass: offPassword } }).sendMail({
          from: 'off@example.com',
          to: 'ann@example.org',
          subject: 'x',
          text: 'x',
        }),
      ),
      [550, '5.7.1'],
      'address_disabled',
    );
  });

  t.test('loopback may log in without STARTTLS (development, a local webmail)', async (t) => {
    const plain = await client({ ignoreTLS: true }).sendMail({
      from: 'a@example.com',
      to: 'ann@example.org',
      subject: 'over loopback',
      text: 'x',
    });
    t.match(plain.response, /^250 /);
  });

  t.test(
    'off loopback AUTH needs STARTTLS',
    { skip: !outsideAddress && 'this machine has no address but loopback: a client off loopback cannot be made' },
    async (t) => {
      const outside = await listen(outsideAddress!);
      const there = (options: SMTPTransport.Options) =>
        client({ host: outsideAddress!, port: outside.port, ...options });
      t.same(await refusal(there({ ignoreTLS: true }).verify()), [538, '5.7.11'], 'no STARTTLS, no AUTH');
      const secured = await there({ requireTLS: true }).sendMail({
        from: 'a@example.com',
        to: 'ann@example.org',
        subject: 'over TLS',
        text: 'x',
      });
      t.match(secured.response, /^250 /, 'after STARTTLS it logs in and sends');
    },
  );

  t.test('the monthly allowance: past it 452, a temporary refusal', async (t) => {
    const send = () => client().sendMail({ from: 'a@example.com', to: 'ann@example.org', subject: 'again', text: 'x' });
    while ((await emails()).length < ALLOWANCE) await send();
    t.same(await refusal(send()), [452, '4.2.2']);
    t.equal((await emails()).length, ALLOWANCE);
    t.same(errors, [], 'no failure of ours on the way');
  });
});
