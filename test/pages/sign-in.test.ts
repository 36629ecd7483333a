import t from 'tap';
import { generate } from 'otplib';
import { acceptInvitation } from '../../commands/members/handlers.ts';
import { findInvitation } from '../../projections/members/queries.ts';
import { startTestApp } from '../support/app.ts';
import { challengeIn, mailedCode, postForm, sessionCookie } from '../support/accounts.ts';
import { startSmtpServer } from '../support/smtp.ts';

/**
 * Sign-in to our pages by a mailed code, over HTTP against the whole service: the codes come out
 * of a loopback SMTP server, the authenticator codes are computed from the secret the page shows.
 */
t.test('sign-in by mailed code, sessions, two-factor', async (t) => {
  const smtp = await startSmtpServer(t);
  // The pages' public address is https: the cookie is Secure (the browser test sees it without, over http).
  const h = await startTestApp(t, {
    smtpUrl: smtp.url,
    signInMails: { pollMs: 20 },
    forwardConsent: { publicUrl: 'https://mail.example.test' },
  });
  const ws = await h.workspace('Acme & Co');
  const owner = 'owner0@example.com';
  const app = h.app;
  const get = (url: string, cookie?: string) => app.inject({ method: 'GET', url, headers: cookie ? { cookie } : {} });
  const ask = (email: string) => postForm(app, '/sign-in', { email });
  // Each test starts an hour after the last (the throttle's rows aged rather than waited for).
  t.beforeEach(async () => {
    await h.system.database.pool.query("UPDATE sign_in_challenges SET created_at = created_at - interval '1 hour'");
  });
  /** The code of `challenge`, once its mail reached `email`. */
  const codeOf = (challenge: string, email: string) =>
    mailedCode(smtp.mails, email, h.system.accounts.ports.codes.signInCode(challenge));
  /** Asks a code for `email`, answers it with the mailed one. */
  const signInStart = async (email: string) => {
    const challenge = challengeIn((await ask(email)).body);
    const code = await codeOf(challenge, email);
    return { challenge, code, answered: await postForm(app, '/sign-in/code', { challenge, code }) };
  };

  t.test('the sign-in page asks for an email', async (t) => {
    const page = await get('/sign-in');
    t.equal(page.statusCode, 200);
    t.match(page.headers['content-type'], 'text/html');
    t.match(page.body, '<label for="email">Email address</label>');
    t.match(page.body, 'autocomplete="email"');
    t.equal((await get('/account')).headers.location, '/sign-in', 'the account page sends a stranger to sign in');
  });

  t.test('happy path: code mailed, session cookie, account page, sign-out revokes it', async (t) => {
    const { answered } = await signInStart(owner);
    t.equal(answered.statusCode, 303);
    t.equal(answered.headers.location, '/account');
    const setCookie = String(answered.headers['set-cookie']);
    t.match(
      setCookie,
      /^wms_session=[\w-]+\.[\w-]+; Path=\/; Max-Age=\d+; HttpOnly; SameSite=Lax; Secure$/,
      'Secure behind an https public address',
    );
    t.ok(Number(/Max-Age=(\d+)/.exec(setCookie)?.[1]) > 13 * 86_400, 'the cookie lasts as the session does');
    const cookie = sessionCookie(answered);
    const account = await get('/account', cookie);
    t.equal(account.statusCode, 200);
    t.match(account.body, `Signed in as <strong>${owner}</strong>`);
    t.match(account.body, '<li>Acme &amp; Co (owner)</li>', 'the workspaces, the name escaped');
    t.match(account.body, 'Two-factor sign-in is off.');
    t.equal((await get('/sign-in', cookie)).headers.location, '/account', 'signed in already');
    t.equal(
      (await get('/account', `wms_session=${cookie.split('.')[0]!.split('=')[1]}.forged`)).statusCode,
      303,
      'a forged MAC opens nothing',
    );

    const out = await postForm(app, '/sign-out', {}, { cookie });
    t.equal(out.statusCode, 303);
    t.match(String(out.headers['set-cookie']), /^wms_session=; Path=\/; Max-Age=0;/);
    t.equal((await get('/account', cookie)).headers.location, '/sign-in', 'the old cookie is revoked server-side');
    const events = await h.system.store.readStream(`service.account-${owner}`);
    t.same(
      events.map((e) => e.type),
      ['AccountCreated', 'SignedIn', 'SignedOut'],
    );
  });

  t.test('the mail carries the code, for 10 minutes, and the address of the page', async (t) => {
    const challenge = challengeIn((await ask(owner)).body);
    const code = await codeOf(challenge, owner);
    const mail = smtp.mails.find((m) => m.subject.startsWith(code))!;
    t.match(mail.text, `https://mail.example.test/sign-in is:\n\n    ${code}\n`);
    t.match(mail.text, 'It works for 10 minutes, once.');
    t.notOk(mail.text.includes(challenge), 'the challenge itself is not mailed');
  });

  t.test('racing answers with the right code open one session; racing requests stop at five codes', async (t) => {
    const challenge = challengeIn((await ask(owner)).body);
    const code = await codeOf(challenge, owner);
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => postForm(app, '/sign-in/code', { challenge, code })),
    );
    t.same(answers.map((a) => a.statusCode).sort(), [303, 400, 400, 400, 400, 400], 'one winner');
    const asks = await Promise.all(Array.from({ length: 8 }, () => ask('racer@example.com')));
    t.same(asks.map((a) => a.statusCode).sort(), [200, 200, 200, 200, 200, 429, 429, 429]);
  });

  t.test('sign out everywhere ends the other sessions too', async (t) => {
    const here = sessionCookie((await signInStart(owner)).answered);
    const there = sessionCookie((await signInStart(owner)).answered);
    t.equal((await get('/account', there)).statusCode, 200);
    t.match((await get('/account', here)).body, '<button type="submit">Sign out everywhere</button>');
    const out = await postForm(app, '/sign-out/everywhere', {}, { cookie: here });
    t.equal(out.statusCode, 303);
    t.match(String(out.headers['set-cookie']), /^wms_session=; Path=\/; Max-Age=0;/);
    t.equal((await get('/account', here)).headers.location, '/sign-in');
    t.equal((await get('/account', there)).headers.location, '/sign-in', 'the other device too');
  });

  t.test('the account page lists the other sessions, and ends one of them', async (t) => {
    await postForm(app, '/sign-out/everywhere', {}, { cookie: sessionCookie((await signInStart(owner)).answered) });
    const here = sessionCookie((await signInStart(owner)).answered);
    t.match((await get('/account', here)).body, 'You are signed in here only.');
    const there = sessionCookie((await signInStart(owner)).answered);
    const page = (await get('/account', here)).body;
    const listed = [...page.matchAll(/name="session" value="([^"]+)"/g)].map((m) => m[1]);
    t.same(listed, [there.split('=')[1]!.split('.')[0]], 'the other one, by its id, not its cookie');
    t.match(page, /<li>Signed in \d{4}-\d\d-\d\d \d\d:\d\d UTC <form/);
    const ended = await postForm(app, '/account/sessions/end', { session: listed[0]! }, { cookie: here });
    t.equal(ended.statusCode, 303);
    t.equal((await get('/account', there)).headers.location, '/sign-in', 'that session ended');
    t.equal((await get('/account', here)).statusCode, 200, 'this one goes on');
    const stranger = await postForm(app, '/account/sessions/end', { session: 'not-mine' }, { cookie: here });
    t.equal(stranger.statusCode, 303, 'an id not of this account decides nothing');
    t.equal((await get('/account', here)).statusCode, 200);
  });

  t.test('a session past its 14 days opens nothing', async (t) => {
    const cookie = sessionCookie((await signInStart(owner)).answered);
    t.equal((await get('/account', cookie)).statusCode, 200);
    // Fourteen days pass (the session's end moved back rather than waited for).
    const sessionId = cookie.split('=')[1]!.split('.')[0]!;
    await h.system.database.pool.query(
      "UPDATE account_sessions SET expires_at = now() - interval '1 second' WHERE session_id = $1",
      [sessionId],
    );
    t.equal((await get('/account', cookie)).headers.location, '/sign-in');
  });

  t.test('an invitee who accepted signs in, and sees the workspace as a member', async (t) => {
    const email = 'ann@example.org';
    const invitee = await postForm(app, '/sign-in', { email });
    const before = await postForm(app, '/sign-in/code', {
      challenge: challengeIn(invitee.body),
      code: h.system.accounts.ports.codes.signInCode(challengeIn(invitee.body)),
    });
    t.equal(before.statusCode, 400, 'no account yet: even the code the challenge would have opens nothing');
    const roles = (await h.request(ws.apiKey, 'GET', '/roles?limit=100')).json().data;
    const roleId = roles.find((r: { builtin: string | null }) => r.builtin === 'member').id;
    const invited = (await h.request(ws.apiKey, 'POST', '/members', { email, roleId })).json();
    const invitation = await findInvitation(h.system.readDb, ws.workspaceId, invited.id);
    await acceptInvitation(
      h.system.commands,
      { workspaceId: ws.workspaceId, invitationId: invited.id, nonce: invitation!.nonce, email },
      new Date().toISOString(),
    );
    const { answered } = await signInStart(email);
    t.equal(answered.statusCode, 303);
    const account = await get('/account', sessionCookie(answered));
    t.match(account.body, `Signed in as <strong>${email}</strong> (ann)`);
    t.match(account.body, '<li>Acme &amp; Co (member)</li>');
  });

  t.test('an unknown email is answered exactly like a known one, and nothing is mailed to it', async (t) => {
    const known = await ask(owner);
    const unknown = await ask('nobody@example.com');
    t.equal(unknown.statusCode, known.statusCode);
    const strip = (html: string, email: string) => html.replace(challengeIn(html), 'C').replace(email, 'E');
    t.equal(strip(unknown.body, 'nobody@example.com'), strip(known.body, owner), 'the same page');
    t.same(Object.keys(unknown.headers).sort(), Object.keys(known.headers).sort());
    const wrongKnown = await postForm(app, '/sign-in/code', { challenge: challengeIn(known.body), code: '000000' });
    const wrongUnknown = await postForm(app, '/sign-in/code', { challenge: challengeIn(unknown.body), code: '000000' });
    t.equal(wrongUnknown.statusCode, 400);
    t.equal(
      wrongUnknown.body.replace(challengeIn(wrongUnknown.body), 'C'),
      wrongKnown.body.replace(challengeIn(wrongKnown.body), 'C'),
      'a wrong code says the same',
    );
    await codeOf(challengeIn(known.body), owner);
    t.equal(smtp.mails.filter((m) => m.to.includes('nobody@example.com')).length, 0);
    const bad = await ask('not an email');
    t.equal(bad.statusCode, 400);
    t.match(bad.body, 'role="alert"');
  });

  t.test('wrong codes count down; the fifth locks the challenge, even for the right code', async (t) => {
    const asked = await ask(owner);
    const challenge = challengeIn(asked.body);
    const code = await codeOf(challenge, owner);
    const wrong = code === '999999' ? '999998' : '999999';
    for (let left = 4; left >= 1; left--) {
      const answer = await postForm(app, '/sign-in/code', { challenge, code: wrong });
      t.equal(answer.statusCode, 400);
      t.match(answer.body, `That code is not right. ${left} ${left === 1 ? 'try' : 'tries'} left.`);
      t.equal(challengeIn(answer.body), challenge, 'the form again, same challenge');
    }
    const last = await postForm(app, '/sign-in/code', { challenge, code: wrong });
    t.match(last.body, 'it was the last try: this sign-in is locked');
    const right = await postForm(app, '/sign-in/code', { challenge, code });
    t.equal(right.statusCode, 400);
    t.match(right.body, 'locked after 5 wrong codes');
    t.notOk(right.headers['set-cookie']);
  });

  t.test('an expired code, and a code used already, open nothing', async (t) => {
    const asked = await ask(owner);
    const challenge = challengeIn(asked.body);
    const code = await codeOf(challenge, owner);
    // Ten minutes pass (the row's expiry moved back rather than waiting them out).
    await h.system.database.pool.query(
      "UPDATE sign_in_challenges SET expires_at = now() - interval '1 second' WHERE id = $1",
      [challenge],
    );
    const expired = await postForm(app, '/sign-in/code', { challenge, code });
    t.equal(expired.statusCode, 400);
    t.match(expired.body, 'This code no longer works');
    t.match(expired.body, '<a href="/sign-in">Ask for a new code</a>');

    const fresh = await signInStart(owner);
    t.equal(fresh.answered.statusCode, 303);
    const again = await postForm(app, '/sign-in/code', { challenge: fresh.challenge, code: fresh.code });
    t.equal(again.statusCode, 400, 'once only');
    t.match(again.body, 'This code no longer works');
  });

  t.test('five codes an hour per email, known or not; the sixth is 429 with Retry-After', async (t) => {
    for (const email of ['throttled@example.com', owner]) {
      const { rows } = await h.system.database.pool.query(
        "SELECT count(*)::int AS n FROM sign_in_challenges WHERE email = $1 AND created_at > now() - interval '1 hour'",
        [email],
      );
      for (let i = rows[0].n; i < 5; i++) t.equal((await ask(email)).statusCode, 200, `code ${i + 1} for ${email}`);
      const sixth = await ask(email);
      t.equal(sixth.statusCode, 429, email);
      t.ok(Number(sixth.headers['retry-after']) > 0 && Number(sixth.headers['retry-after']) <= 3600);
      t.match(sixth.body, 'Codes for this address were asked for too often.');
    }
    // An hour passes for the throttle (the rows aged rather than waiting it out).
    await h.system.database.pool.query("UPDATE sign_in_challenges SET created_at = created_at - interval '1 hour'");
    t.equal((await ask(owner)).statusCode, 200, 'an hour later, codes again');
  });

  t.test('two-factor: on with a confirm code, sign-in by authenticator, backup codes once, off', async (t) => {
    const first = await signInStart(owner);
    const cookie = sessionCookie(first.answered);

    const setup = await postForm(app, '/account/two-factor', {}, { cookie });
    t.equal(setup.statusCode, 200);
    const secret = /Key: <code>([A-Z2-7]+)<\/code>/.exec(setup.body)?.[1] as string;
    t.ok(secret, 'the key is shown');
    t.match(setup.body, 'otpauth://totp/');
    const wrongConfirm = await postForm(app, '/account/two-factor/confirm', { code: '000000' }, { cookie });
    t.equal(wrongConfirm.statusCode, 400);
    t.match(wrongConfirm.body, 'That is not the code your authenticator shows.');
    const now = Math.floor(Date.now() / 1000);
    const confirmed = await postForm(
      app,
      '/account/two-factor/confirm',
      { code: await generate({ secret, epoch: now }) },
      { cookie },
    );
    t.equal(confirmed.statusCode, 200);
    const backupCodes = [...confirmed.body.matchAll(/<li><code>([a-z0-9-]+)<\/code><\/li>/g)].map((m) => m[1]!);
    t.equal(backupCodes.length, 10, 'ten backup codes, shown once');
    t.equal(new Set(backupCodes).size, 10);
    t.match((await get('/account', cookie)).body, 'Two-factor sign-in is on. 10 of your backup codes are unused.');

    const history = JSON.stringify(await h.system.store.readStream(`service.account-${owner}`));
    t.notOk(history.includes(secret), 'the secret is in no event');
    for (const c of backupCodes)
      t.notOk(history.includes(c) || history.includes(c.replace('-', '')), 'nor a backup code');
    const { rows: vault } = await h.system.database.pool.query(
      'SELECT id, ciphertext FROM vault_secrets WHERE id LIKE $1',
      ['account-totp%'],
    );
    t.same(
      vault.map((r) => r.id),
      [`account-totp:${ws.ownerUserId}`],
      'the secret in the vault, the setup one gone',
    );
    t.notOk(vault[0].ciphertext.toString('latin1').includes(secret), 'encrypted at rest');

    // The authenticator: a code of the next step (the confirm code's step is spent).
    const second = await signInStart(owner);
    t.equal(second.answered.statusCode, 200, 'the mailed code alone is not enough now');
    t.match(second.answered.body, 'Authenticator or backup code');
    const challenge = challengeIn(second.answered.body);
    const wrongTotp = await postForm(app, '/sign-in/second-factor', { challenge, code: '000000' });
    t.equal(wrongTotp.statusCode, 400);
    t.match(wrongTotp.body, '4 tries left');
    const totp = await generate({ secret, epoch: now + 30 });
    const signedIn = await postForm(app, '/sign-in/second-factor', { challenge, code: totp });
    t.equal(signedIn.statusCode, 303);
    t.equal(signedIn.headers.location, '/account');
    const viaTotp = sessionCookie(signedIn);
    t.equal((await get('/account', viaTotp)).statusCode, 200);

    const third = await signInStart(owner);
    const replay = await postForm(app, '/sign-in/second-factor', {
      challenge: challengeIn(third.answered.body),
      code: totp,
    });
    t.equal(replay.statusCode, 400, 'the same authenticator code twice is a wrong answer');

    const backup = backupCodes[2]!;
    const byBackup = await postForm(app, '/sign-in/second-factor', {
      challenge: challengeIn(third.answered.body),
      code: backup.toUpperCase(),
    });
    t.equal(byBackup.statusCode, 303, 'a backup code, however typed');
    t.match((await get('/account', sessionCookie(byBackup))).body, '9 of your backup codes are unused.');
    const fourth = await signInStart(owner);
    const spent = await postForm(app, '/sign-in/second-factor', {
      challenge: challengeIn(fourth.answered.body),
      code: backup,
    });
    t.equal(spent.statusCode, 400, 'a backup code works once');
    t.match(spent.body, '4 tries left');

    const wrongOff = await postForm(app, '/account/two-factor/off', { code: 'nothing-here' }, { cookie: viaTotp });
    t.equal(wrongOff.statusCode, 400);
    t.match(wrongOff.body, 'Two-factor sign-in is on.');
    const off = await postForm(app, '/account/two-factor/off', { code: backupCodes[5]! }, { cookie: viaTotp });
    t.equal(off.statusCode, 303);
    t.match((await get('/account', viaTotp)).body, 'Two-factor sign-in is off.');
    const { rows: gone } = await h.system.database.pool.query('SELECT id FROM vault_secrets WHERE id LIKE $1', [
      'account-totp%',
    ]);
    t.same(gone, [], 'the secret left the vault');
    t.equal((await signInStart(owner)).answered.statusCode, 303, 'the mailed code alone again');
  });

  t.test('five wrong codes in an hour pause turning two-factor off', async (t) => {
    const cookie = sessionCookie((await signInStart(owner)).answered);
    const setup = await postForm(app, '/account/two-factor', {}, { cookie });
    const secret = /Key: <code>([A-Z2-7]+)<\/code>/.exec(setup.body)?.[1] as string;
    const on = await postForm(app, '/account/two-factor/confirm', { code: await generate({ secret }) }, { cookie });
    t.equal(on.statusCode, 200, 'on again with a new secret');
    const backup = /<li><code>([a-z0-9-]+)<\/code><\/li>/.exec(on.body)?.[1] as string;
    for (let i = 1; i <= 5; i++) {
      const wrong = await postForm(app, '/account/two-factor/off', { code: `wrong-${i}` }, { cookie });
      t.equal(wrong.statusCode, 400);
      t.match(wrong.body, 'That is not an unused code of your authenticator nor a backup code.');
    }
    const paused = await postForm(app, '/account/two-factor/off', { code: backup }, { cookie });
    t.equal(paused.statusCode, 400, 'even the right code');
    t.match(paused.body, 'Too many wrong codes: try again in 60 minutes.');
    t.match((await get('/account', cookie)).body, 'Two-factor sign-in is on.');
  });

  t.test('a form posted from another site is refused', async (t) => {
    const refused = await postForm(app, '/sign-in', { email: owner }, { 'sec-fetch-site': 'cross-site' });
    t.equal(refused.statusCode, 403);
    const otherOrigin = await postForm(app, '/sign-out', {}, { origin: 'https://evil.example' });
    t.equal(otherOrigin.statusCode, 403);
  });
});
