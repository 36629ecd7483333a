import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { inspect } from 'node:util';
import { simpleParser, type AddressObject, type ParsedMail } from 'mailparser';
import { SMTPServer, type SMTPServerAddress } from 'smtp-server';
import t, { type Test } from 'tap';
import { FileOutbox } from '../../infra/mail/file-outbox.ts';
import type { OutboundMessage } from '../../infra/mail/port.ts';
import { openMailSender } from '../../infra/mail/select.ts';
import { MailSendError, SmtpSender } from '../../infra/mail/smtp.ts';

const notice: OutboundMessage = {
  from: 'Workspace Mail <noreply@mail.example.com>',
  to: ['owner@example.com', 'Member Two <member@example.com>'],
  subject: 'Your webhook endpoint was disabled — été',
  text: 'The endpoint https://hooks.example.com/in failed 20 times in a row and was disabled.\n',
  html: '<p>The endpoint <b>https://hooks.example.com/in</b> was disabled.</p>',
  headers: { 'Auto-Submitted': 'auto-generated', 'X-Workspace-Id': 'ws_01' },
};

function addresses(field: AddressObject | AddressObject[] | undefined): string[] {
  const list = Array.isArray(field) ? field : field ? [field] : [];
  return list.flatMap((group) => group.value.map((entry) => entry.address ?? ''));
}

function checkNotice(t: Test, mail: ParsedMail): void {
  t.same(addresses(mail.from), ['noreply@mail.example.com'], 'from');
  t.equal(mail.from?.value[0]?.name, 'Workspace Mail', 'from display name');
  t.same(addresses(mail.to), ['owner@example.com', 'member@example.com'], 'to');
  t.equal(mail.subject, notice.subject, 'subject, non-ASCII included');
  t.equal(mail.text, notice.text, 'text');
  t.equal(mail.html, notice.html, 'html');
  t.equal(mail.headers.get('auto-submitted'), 'auto-generated', 'custom header');
  t.equal(mail.headers.get('x-workspace-id'), 'ws_01', 'custom header');
  t.notOk(mail.bcc, 'no Bcc');
}

t.test('file outbox', async (t) => {
  const root = await mkdtemp(path.join(tmpdir(), 'wms-outbox-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const dir = path.join(root, 'data', 'outbox');
  const outbox = new FileOutbox({ dir, now: () => new Date('2026-11-22T04:10:12.786Z') });
  t.teardown(() => outbox.close());

  t.test('writes one parseable .eml per message, created directory and all', async (t) => {
    const { messageId } = await outbox.send(notice);
    t.match(messageId, /^<[^<>\s]+@mail\.example\.com>$/, 'a Message-ID in angle brackets');
    const files = await readdir(dir);
    t.equal(files.length, 1, 'one file, no temporary left behind');
    const name = files[0] ?? '';
    t.match(name, /^20261122T041012\.786Z-[A-Za-z0-9._-]+\.eml$/, 'named <basic ISO timestamp>-<message id>.eml');
    t.ok(name.includes(messageId.slice(1, -1).replace('@', '_')), 'the name carries the message id');

    const raw = await readFile(path.join(dir, name));
    t.ok(raw.includes('\r\n'), 'CRLF line ends');
    t.notOk(/[^\r]\n/.test(raw.toString('latin1')), 'no bare LF');
    const mail = await simpleParser(raw);
    checkNotice(t, mail);
    t.equal(mail.messageId, messageId, 'the file carries the returned Message-ID');
    t.ok(mail.date instanceof Date, 'a Date header');
  });

  t.test('a line break in the subject cannot start a header', async (t) => {
    const { messageId } = await outbox.send({ ...notice, subject: 'Hi\r\nBcc: evil@x', html: undefined });
    const name = (await readdir(dir)).find((file) => file.includes(messageId.slice(1, -1).replace('@', '_')));
    t.ok(name, 'written');
    const raw = await readFile(path.join(dir, name ?? 'missing'), 'utf8');
    t.notMatch(raw, /^bcc:/im, 'no Bcc line in the file');
    const mail = await simpleParser(raw);
    t.notOk(mail.headers.has('bcc'), 'no Bcc header parsed');
    t.notOk(mail.bcc, 'no Bcc address');
    t.same(addresses(mail.to), ['owner@example.com', 'member@example.com'], 'recipients unchanged');
    t.equal(mail.subject, 'Hi Bcc: evil@x', 'the subject stays one line');
  });

  t.test('a message that breaks the port rules is refused before anything is written', async (t) => {
    const before = await readdir(dir);
    const bad: [string, OutboundMessage][] = [
      ['a line break in a header value', { ...notice, headers: { 'X-Note': 'a\r\nBcc: evil@x' } }],
      ['a header name with a colon', { ...notice, headers: { 'Bcc: evil@x\r\nX': 'y' } }],
      ['a reserved header', { ...notice, headers: { bcc: 'evil@x' } }],
      ['a line break in a recipient', { ...notice, to: ['a@example.com\r\nBcc: evil@x'] }],
      ['a line break in from', { ...notice, from: 'a@example.com\nBcc: evil@x' }],
      ['no recipient', { ...notice, to: [] }],
    ];
    for (const [label, message] of bad) {
      await t.rejects(outbox.send(message), TypeError, label);
    }
    t.same(await readdir(dir), before, 'nothing written');
  });

  t.test('concurrent sends each get their own file', async (t) => {
    const before = (await readdir(dir)).length;
    const sent = await Promise.all(
      Array.from({ length: 5 }, () => outbox.send({ ...notice, to: ['one@example.com'] })),
    );
    t.equal(new Set(sent.map((s) => s.messageId)).size, 5, 'distinct message ids');
    t.equal((await readdir(dir)).length, before + 5, 'five more files');
  });

  t.test('a send after close is refused', async (t) => {
    const closing = new FileOutbox({ dir });
    await closing.close();
    await t.rejects(closing.send(notice), /closed/);
  });
});

t.test('openMailSender', async (t) => {
  const outbox = openMailSender({ outboxDir: '/nonexistent/outbox' });
  t.ok(outbox instanceof FileOutbox, 'no SMTP_URL: the file outbox (nothing touched until a send)');
  t.equal((outbox as FileOutbox).dir, '/nonexistent/outbox');
  await outbox.close();
  const empty = openMailSender({ smtpUrl: '', outboxDir: '/nonexistent/outbox' });
  t.ok(empty instanceof FileOutbox, 'an empty SMTP_URL counts as unset');
  await empty.close();
  const smtp = openMailSender({ smtpUrl: 'smtp://u:p@127.0.0.1:2525', outboxDir: '/nonexistent/outbox' });
  t.ok(smtp instanceof SmtpSender, 'SMTP_URL: SMTP');
  t.equal((smtp as SmtpSender).endpoint, 'smtp://127.0.0.1:2525', 'the endpoint carries no credentials');
  await smtp.close();
});

t.test('SMTP', async (t) => {
  const user = 'mailer';
  const password = 'p@ss:w/rd s3cret!';
  const received: { from: string; to: string[]; user: unknown; raw: Buffer }[] = [];
  let logins = 0;
  const server = new SMTPServer({
    logger: false,
    // Plain loopback test server: no STARTTLS (the built-in certificate is self-signed), so AUTH
    // has to be allowed in the clear.
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    authOptional: false,
    onAuth(auth, _session, callback) {
      logins += 1;
      if (auth.username === user && auth.password === password) callback(null, { user: auth.username });
      else callback(new Error('Invalid username or password'));
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const envelopeFrom = session.envelope.mailFrom;
        received.push({
          from: envelopeFrom ? envelopeFrom.address : '',
          to: session.envelope.rcptTo.map((rcpt: SMTPServerAddress) => rcpt.address),
          user: session.user,
          raw: Buffer.concat(chunks),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const port = (server.server.address() as AddressInfo).port;
  const url = (pass: string) => `smtp://${user}:${encodeURIComponent(pass)}@127.0.0.1:${port}`;

  t.test('delivers over a pooled, authenticated connection', async (t) => {
    const sender = new SmtpSender(url(password));
    t.teardown(() => sender.close());
    t.equal(sender.endpoint, `smtp://127.0.0.1:${port}`);
    await sender.verify();
    const first = await sender.send(notice);
    const second = await sender.send({ ...notice, subject: 'Hi\r\nBcc: evil@x', to: ['owner@example.com'] });
    t.equal(received.length, 2, 'both messages reached the server');
    const [one, two] = received;
    t.equal(one?.from, 'noreply@mail.example.com', 'envelope sender');
    t.same(one?.to, ['owner@example.com', 'member@example.com'], 'envelope recipients');
    t.equal(one?.user, user, 'sent after logging in');
    const mail = await simpleParser(one?.raw ?? Buffer.alloc(0));
    checkNotice(t, mail);
    t.equal(mail.messageId, first.messageId, 'the returned Message-ID is the one sent');

    t.same(two?.to, ['owner@example.com'], 'the injected Bcc added no recipient');
    const injected = await simpleParser(two?.raw ?? Buffer.alloc(0));
    t.notOk(injected.headers.has('bcc'), 'no Bcc header');
    t.equal(injected.messageId, second.messageId);
  });

  t.test('a wrong password fails without the password in the error', async (t) => {
    const wrong = 'Wr0ng/pa ss%word';
    const sender = new SmtpSender(url(wrong));
    t.teardown(() => sender.close());
    const before = received.length;
    const error = await sender.send(notice).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    t.ok(error instanceof MailSendError, 'a MailSendError');
    const failure = error as MailSendError;
    t.equal(failure.code, 'EAUTH');
    t.equal(failure.responseCode, 535);
    const everything = [
      String(failure),
      failure.stack ?? '',
      inspect(failure, { depth: 10, showHidden: true }),
      JSON.stringify(failure),
    ].join('\n');
    for (const form of [
      wrong,
      encodeURIComponent(wrong),
      Buffer.from(wrong).toString('base64'),
      Buffer.from(`\0${user}\0${wrong}`).toString('base64'),
    ]) {
      t.notOk(everything.includes(form), `the error does not contain ${JSON.stringify(form)}`);
    }
    t.match(failure.message, /127\.0\.0\.1/, 'it says which server');
    t.equal(received.length, before, 'nothing delivered');
  });

  t.test('requireTLS (the default off loopback) never sends the password in the clear', async (t) => {
    const sender = new SmtpSender(`${url(password)}?requireTLS=true`);
    t.teardown(() => sender.close());
    const [before, loginsBefore] = [received.length, logins];
    await t.rejects(sender.send(notice), MailSendError, 'refused: the server offers no STARTTLS');
    t.equal(logins, loginsBefore, 'no login was attempted');
    t.equal(received.length, before, 'nothing delivered');
  });

  t.test('an unparseable SMTP_URL is refused without quoting it', async (t) => {
    const thrown = (() => {
      try {
        new SmtpSender('smtp://mailer:topsecret@[not-a-host');
      } catch (error) {
        return error as Error;
      }
      return undefined;
    })();
    t.ok(thrown instanceof TypeError);
    t.notOk(inspect(thrown, { showHidden: true }).includes('topsecret'), 'the password is not in the error');
    t.throws(() => new SmtpSender('http://mailer:pw@example.com'), /smtp: or smtps:/);
  });
});
