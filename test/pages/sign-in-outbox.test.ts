import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { simpleParser } from 'mailparser';
import t from 'tap';
import { challengeIn, postForm, sessionCookie } from '../support/accounts.ts';
import { startTestApp } from '../support/app.ts';
import { eventually } from '../support/receiver.ts';

/** The embedded default: no SMTP_URL, so the code arrives as an `.eml` file in the outbox. */
t.test('the sign-in code of the embedded default lands in the file outbox', async (t) => {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'wms-test-'));
  const h = await startTestApp(t, { dataDir, signInMails: { pollMs: 20 } });
  // After the system's own teardown, which closes what writes here.
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  await h.workspace('Outbox');
  const asked = await postForm(h.app, '/sign-in', { email: 'owner0@example.com' });
  const challenge = challengeIn(asked.body);
  const outbox = path.join(dataDir, 'outbox');
  const mail = await eventually(async () => {
    const names = (await readdir(outbox).catch(() => [])).filter((n) => n.endsWith('.eml'));
    return names.length === 1 ? simpleParser(await readFile(path.join(outbox, names[0]!))) : undefined;
  });
  const code = /^(\d{6}) is your sign-in code$/.exec(mail.subject ?? '')?.[1] as string;
  t.ok(code, 'the code, in the subject');
  t.match(mail.text, `    ${code}\n`, 'and in the text');
  t.equal(mail.headers.get('auto-submitted'), 'auto-generated');
  const answered = await postForm(h.app, '/sign-in/code', { challenge, code });
  t.equal(answered.statusCode, 303);
  const account = await h.app.inject({ method: 'GET', url: '/account', headers: { cookie: sessionCookie(answered) } });
  t.match(account.body, 'Signed in as <strong>owner0@example.com</strong>');
});
