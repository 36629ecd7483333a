import crypto from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { generate } from 'otplib';
import t from 'tap';
import { stepUpRefusal, type Credential } from '../../api/credential.ts';
import { challengeIn, postForm, sessionCookie } from '../support/accounts.ts';
import { startTestApp } from '../support/app.ts';
import { startSmtpServer } from '../support/smtp.ts';

const NOW = Date.parse('2026-01-01T12:00:00.000Z');
const credential = (kind: Credential['kind'], elevatedUntil?: string | null): Credential => ({
  kind,
  id: null,
  workspaceId: 'ws_1',
  mode: 'live',
  grantedScopes: [],
  scopes: [],
  roleId: null,
  addressAllowlist: null,
  domainAllowlist: null,
  elevatedUntil,
});

t.test('step-up: an OAuth token must be elevated for sensitive changes; API keys are never asked', async (t) => {
  t.equal(stepUpRefusal(credential('apiKey'), NOW), null);
  t.type(stepUpRefusal(credential('oauth'), NOW), 'string', 'never elevated');
  t.type(stepUpRefusal(credential('oauth', '2026-01-01T11:59:59.999Z'), NOW), 'string', 'elevation ran out');
  t.equal(stepUpRefusal(credential('oauth', '2026-01-01T12:30:00.000Z'), NOW), null, 'elevated');
});

t.test('the sensitive operations say so in the OpenAPI document, and keys pass them', async (t) => {
  const h = await startTestApp(t);
  const ws = await h.workspace();
  const doc = (await h.request(null, 'GET', '/openapi.json')).json();
  for (const [path, method] of [
    ['/webhooks', 'post'],
    ['/webhooks/{id}', 'patch'],
    ['/roles/{id}', 'patch'],
    ['/roles/{id}', 'delete'],
    ['/rules', 'post'],
    ['/rules/{id}', 'patch'],
    ['/audiences/{id}', 'delete'],
  ] as const) {
    t.match(doc.paths[path][method].description, /step_up_required/, `${method} ${path}`);
  }
  t.notMatch(
    doc.paths['/webhooks/{id}'].delete.description,
    /step_up_required/,
    'delete of an endpoint is not on the list',
  );
  t.equal(
    (await h.request(ws.apiKey, 'POST', '/webhooks', { url: 'https://hooks.example.com/x' })).statusCode,
    201,
    'a key is never asked',
  );
});

/** An app's side of PKCE (RFC 7636): a verifier and its S256 challenge. */
const pkce = () => {
  const verifier = crypto.randomBytes(48).toString('base64url');
  return { verifier, challenge: crypto.createHash('sha256').update(verifier).digest('base64url') };
};
const CALLBACK = 'https://app.example.test/callback';

/**
 * Step-up over HTTP against the whole service: the owner signs in, registers apps and connects
 * them (the code flow with PKCE, as test/http/oauth.test.ts drives it), and the apps ask for
 * codes, which a loopback SMTP server receives; authenticator codes are computed from the secret.
 */
t.test('step-up verification: challenges, codes, budgets, elevation', async (t) => {
  const smtp = await startSmtpServer(t);
  const h = await startTestApp(t, { smtpUrl: smtp.url });
  const app = h.app;
  const pool = h.system.database.pool;
  const ws = await h.workspace('Acme');
  const ownerEmail: string = (await pool.query('SELECT email FROM accounts WHERE user_id = $1', [ws.ownerUserId]))
    .rows[0].email;
  const userId = ws.ownerUserId;

  const challenge = challengeIn((await postForm(app, '/sign-in', { email: ownerEmail })).body);
  const signedIn = await postForm(app, '/sign-in/code', {
    challenge,
    code: h.system.accounts.ports.codes.signInCode(challenge),
  });
  const cookie = sessionCookie(signedIn);

  /** A newly registered app connected by the owner: its client id and an access token. */
  const connectApp = async (name: string) => {
    const registered = await postForm(app, '/account/apps', { name, redirect_uris: CALLBACK }, { cookie });
    const clientId = /<code id="client-id">([^<]+)<\/code>/.exec(registered.body)![1]!;
    const { verifier, challenge } = pkce();
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: CALLBACK,
      scope: 'webhooks:write webhooks:read',
      state: 's',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    });
    const consent = await app.inject({ method: 'GET', url: `/oauth/authorize?${query}`, headers: { cookie } });
    const fields: Record<string, string> = {};
    for (const m of consent.body.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g))
      fields[m[1]!] = m[2]!.replace(/&amp;/g, '&');
    const approved = await postForm(
      app,
      '/oauth/authorize',
      { ...fields, workspace: ws.workspaceId, decision: 'approve' },
      { cookie },
    );
    const code = new URL(String(approved.headers.location)).searchParams.get('code')!;
    const tokens = await postForm(app, '/oauth/token', {
      grant_type: 'authorization_code',
      code,
      redirect_uri: CALLBACK,
      client_id: clientId,
      code_verifier: verifier,
    });
    t.equal(tokens.statusCode, 200, `${name} connected`);
    return { clientId, token: tokens.json().access_token as string };
  };

  const call = (token: string, method: 'GET' | 'POST', url: string, payload?: object) =>
    app.inject({ method, url, headers: { authorization: `Bearer ${token}` }, ...(payload ? { payload } : {}) });
  const errorOf = (r: LightMyRequestResponse) => [r.statusCode, r.json().error?.code];
  const ask = (token: string, body: object = {}) => call(token, 'POST', '/security/step-up', body);
  const verify = (token: string, code: string) => call(token, 'POST', '/security/step-up/verify', { code });
  /** The step-up mails so far (the sign-in mail process sends the owner's sign-in code too, at its own pace). */
  const stepUpMails = () => smtp.mails.filter((m) => m.subject.endsWith('is your verification code'));
  /** The code of the newest step-up mail, as the person reads it. */
  const lastCode = () => /^(\d{6}) is your verification code$/.exec(stepUpMails().at(-1)!.subject)![1]!;
  /** A six-digit code that is not `code`. */
  const wrongOf = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, '0');
  const webhooks = async () => (await h.request(ws.apiKey, 'GET', '/webhooks')).json().data.length;

  t.test('API keys, live or test, are never asked: step_up_not_applicable', async (t) => {
    const test = await h.request(ws.apiKey, 'POST', '/keys', { name: 'test', scopes: ['keys:manage'], mode: 'test' });
    for (const key of [ws.apiKey, test.json().token as string]) {
      for (const [method, url, body] of [
        ['GET', '/security/step-up', undefined],
        ['POST', '/security/step-up', { method: 'email' }],
        ['POST', '/security/step-up/verify', { code: '123456' }],
        // Whatever the body: the credential is refused before the input is read.
        ['POST', '/security/step-up', { method: 'sms', extra: 1 }],
        ['POST', '/security/step-up/verify', {}],
      ] as const) {
        const r = await app.inject({ method, url, headers: { authorization: `Bearer ${key}` }, payload: body });
        t.same(errorOf(r), [400, 'step_up_not_applicable'], `${method} ${url}`);
      }
    }
  });

  t.test('an email code elevates the app for the person for 60 minutes', async (t) => {
    const a = await connectApp('Elevate');
    t.same((await call(a.token, 'GET', '/security/step-up')).json(), {
      object: 'step_up',
      elevated: false,
      elevatedUntil: null,
      method: 'email',
      minutes: 60,
    });
    const before = await webhooks();
    t.same(errorOf(await call(a.token, 'POST', '/webhooks', { url: 'https://hooks.example.com/a' })), [
      403,
      'step_up_required',
    ]);
    t.equal(await webhooks(), before, 'nothing changed');
    t.same(errorOf(await verify(a.token, '123456')), [400, 'step_up_code_expired'], 'no code asked for yet');

    const mails = stepUpMails().length;
    const first = await ask(a.token, { method: 'email' });
    t.equal(first.statusCode, 200);
    t.same(first.json(), { object: 'step_up_challenge', method: 'email', reused: false, sentTo: 'o***@example.com' });
    t.equal(stepUpMails().length, mails + 1, 'mailed before the answer');
    t.same(stepUpMails().at(-1)!.to, [ownerEmail]);
    const firstCode = lastCode();
    t.match(stepUpMails().at(-1)!.text, firstCode);

    const again = await ask(a.token);
    t.same(again.json(), { object: 'step_up_challenge', method: 'email', reused: true, sentTo: 'o***@example.com' });
    t.equal(stepUpMails().length, mails + 1, 'a waiting code is reused, nothing sent');

    t.same((await ask(a.token, { resend: true })).json().reused, false, 'resend: a new code');
    const code = lastCode();
    t.not(code, firstCode);
    const stale = await verify(a.token, firstCode);
    t.same(errorOf(stale), [400, 'step_up_code_invalid'], 'the replaced code no longer works');
    t.match(stale.json().error.message, '4 tries left');
    t.equal(stale.json().error.param, 'code');

    const verified = await verify(a.token, code);
    t.equal(verified.statusCode, 200);
    const until = Date.parse(verified.json().elevatedUntil);
    t.ok(Math.abs(until - (Date.now() + 3_600_000)) < 60_000, 'elevated for 60 minutes');
    t.same(
      { ...verified.json(), elevatedUntil: null },
      {
        object: 'step_up',
        elevated: true,
        elevatedUntil: null,
        method: 'email',
        minutes: 60,
      },
    );
    t.same((await call(a.token, 'GET', '/security/step-up')).json().elevated, true);
    t.equal(
      (await call(a.token, 'POST', '/webhooks', { url: 'https://hooks.example.com/a' })).statusCode,
      201,
      'the elevated token passes the guard',
    );
    t.same(errorOf(await verify(a.token, code)), [400, 'step_up_code_expired'], 'a code works once');

    const b = await connectApp('Other app');
    t.same(
      errorOf(await call(b.token, 'POST', '/webhooks', { url: 'https://hooks.example.com/b' })),
      [403, 'step_up_required'],
      'only that app is elevated',
    );

    await pool.query(
      "UPDATE step_up_elevations SET elevated_until = now() - interval '1 second' WHERE client_id = $1",
      [a.clientId],
    );
    t.same(
      errorOf(await call(a.token, 'POST', '/webhooks', { url: 'https://hooks.example.com/c' })),
      [403, 'step_up_required'],
      'after the 60 minutes',
    );
    t.same((await call(a.token, 'GET', '/security/step-up')).json().elevated, false);
  });

  t.test('a code older than 10 minutes is expired', async (t) => {
    const a = await connectApp('Expiry');
    await ask(a.token);
    const code = lastCode();
    await pool.query("UPDATE step_up_challenges SET expires_at = now() - interval '1 second' WHERE client_id = $1", [
      a.clientId,
    ]);
    t.same(errorOf(await verify(a.token, code)), [400, 'step_up_code_expired']);
    t.same((await ask(a.token)).json().reused, false, 'an expired code is not reused');
  });

  t.test('five wrong tries lock a challenge, even against the right code', async (t) => {
    const a = await connectApp('Lock');
    await ask(a.token);
    const code = lastCode();
    for (const left of [4, 3, 2, 1]) {
      const r = await verify(a.token, wrongOf(code));
      t.same(errorOf(r), [400, 'step_up_code_invalid']);
      t.match(r.json().error.message, `${left} ${left === 1 ? 'try' : 'tries'} left`);
    }
    const fifth = await verify(a.token, wrongOf(code));
    t.same(errorOf(fifth), [400, 'step_up_code_invalid']);
    t.match(fifth.json().error.message, 'no tries left');
    t.same(errorOf(await verify(a.token, code)), [429, 'step_up_locked'], 'locked');
    t.same((await ask(a.token)).json().reused, false, 'a locked code is not reused');
    t.equal((await verify(a.token, lastCode())).statusCode, 200, 'a new code works');
    await pool.query('DELETE FROM step_up_wrong_codes WHERE user_id = $1', [userId]);
  });

  t.test('5 new codes per hour and 20 per 24 hours per app and person', async (t) => {
    const a = await connectApp('Budget');
    const resend = () => ask(a.token, { resend: true });
    for (let i = 1; i <= 5; i++) t.equal((await resend()).statusCode, 200, `code ${i} of the hour`);
    const sixth = await resend();
    t.same(errorOf(sixth), [429, 'step_up_throttled'], 'the sixth in the hour');
    const wait = Number(sixth.headers['retry-after']);
    t.ok(wait > 3500 && wait <= 3600, `Retry-After ${wait}`);
    t.same((await ask(a.token)).json().reused, true, 'the waiting code is still reused');
    const other = await connectApp('Budget, other app');
    t.equal((await ask(other.token, { resend: true })).statusCode, 200, 'another app has its own budget');

    const age = () =>
      pool.query("UPDATE step_up_challenges SET created_at = created_at - interval '2 hours' WHERE client_id = $1", [
        a.clientId,
      ]);
    await age();
    for (let i = 6; i <= 19; i++) {
      t.equal((await resend()).statusCode, 200, `code ${i} of the day`);
      if (i % 5 === 0 || i === 19) await age();
    }
    t.equal((await resend()).statusCode, 200, 'the twentieth in 24 hours');
    const past = await resend();
    t.same(errorOf(past), [429, 'step_up_throttled'], 'the twenty-first');
    const dayWait = Number(past.headers['retry-after']);
    t.ok(dayWait > 3600 && dayWait <= 22 * 3600, `Retry-After ${dayWait}: when the oldest leaves the 24 hours`);
  });

  t.test('two challenges at the budget edge: exactly one wins', async (t) => {
    const a = await connectApp('Race');
    for (let i = 1; i <= 4; i++) await ask(a.token, { resend: true });
    const raced = await Promise.all([ask(a.token, { resend: true }), ask(a.token, { resend: true })]);
    t.same(raced.map((r) => r.statusCode).sort(), [200, 429]);
    const { rows } = await pool.query('SELECT count(*)::int AS n FROM step_up_challenges WHERE client_id = $1', [
      a.clientId,
    ]);
    t.equal(rows[0].n, 5, 'five challenges stored');
  });

  t.test('an undeliverable email: 503, no code waiting, nothing counted', async (t) => {
    const a = await connectApp('Undeliverable');
    await ask(a.token);
    const waiting = lastCode();
    smtp.accept = () => false;
    t.teardown(() => {
      smtp.accept = () => true;
    });
    t.same(errorOf(await ask(a.token, { resend: true })), [503, 'step_up_undeliverable']);
    t.same(errorOf(await verify(a.token, waiting)), [400, 'step_up_code_expired'], 'the earlier code ended too');
    smtp.accept = () => true;
    const { rows } = await pool.query('SELECT count(*)::int AS n FROM step_up_challenges WHERE client_id = $1', [
      a.clientId,
    ]);
    t.equal(rows[0].n, 1, 'the undelivered code was not kept');
    t.same((await ask(a.token)).json().reused, false, 'asking again mails a new code');
    t.equal((await verify(a.token, lastCode())).statusCode, 200);
  });

  t.test('10 wrong codes in 24 hours from one app pause it; 20 from all apps pause them all', async (t) => {
    await pool.query('DELETE FROM step_up_wrong_codes WHERE user_id = $1', [userId]);
    const a = await connectApp('Pause');
    const wrongTimes = async (token: string, n: number) => {
      for (let i = 0; i < n; i++) {
        if (i % 5 === 0) await ask(token, { resend: true });
        t.same(errorOf(await verify(token, wrongOf(lastCode()))), [400, 'step_up_code_invalid']);
      }
    };
    await wrongTimes(a.token, 9);
    await ask(a.token, { resend: true });
    t.equal((await verify(a.token, lastCode())).statusCode, 200, 'nine wrong codes: the right one still works');
    await wrongTimes(a.token, 1);
    await ask(a.token, { resend: true });
    const paused = await verify(a.token, lastCode());
    t.same(errorOf(paused), [429, 'step_up_locked'], 'the tenth pauses the app, even for the right code');
    const wait = Number(paused.headers['retry-after']);
    t.ok(wait > 86_000 && wait <= 86_400, `Retry-After ${wait}`);
    t.same(errorOf(await ask(a.token, { resend: true })), [429, 'step_up_locked'], 'and no new codes for it');

    const b = await connectApp('Pause, second app');
    await wrongTimes(b.token, 9);
    await ask(b.token, { resend: true });
    t.equal((await verify(b.token, lastCode())).statusCode, 200, '19 wrong codes across apps: not paused');
    const c = await connectApp('Pause, third app');
    await wrongTimes(c.token, 1);
    await ask(c.token, { resend: true });
    t.same(errorOf(await verify(c.token, lastCode())), [429, 'step_up_locked'], 'the twentieth pauses every app');

    await pool.query("UPDATE step_up_wrong_codes SET at = at - interval '24 hours' WHERE user_id = $1", [userId]);
    await ask(c.token, { resend: true });
    t.equal((await verify(c.token, lastCode())).statusCode, 200, '24 hours later, verification again');
  });

  t.test('the connected-apps page: Allow changes for 60 minutes', async (t) => {
    const a = await connectApp('Page elevation');
    const pageOf = async () =>
      (await app.inject({ method: 'GET', url: '/account/connected-apps', headers: { cookie } })).body;
    const before = await pageOf();
    const item = before.slice(before.indexOf('<strong>Page elevation</strong>'));
    const grant = /name="grant" value="([^"]+)"/.exec(item)![1]!;
    t.match(item.slice(0, item.indexOf('</li>')), 'Allow changes for 60 minutes');

    t.equal(
      (await postForm(app, '/account/connected-apps/allow-changes', { grant })).statusCode,
      303,
      'needs a session',
    );
    const crossSite = await postForm(
      app,
      '/account/connected-apps/allow-changes',
      { grant },
      { cookie, 'sec-fetch-site': 'cross-site' },
    );
    t.equal(crossSite.statusCode, 403, 'a form from another site');
    t.equal(
      (await postForm(app, '/account/connected-apps/allow-changes', { grant: 'grt_unknown' }, { cookie })).statusCode,
      404,
      'an approval not of this person',
    );
    t.same(
      errorOf(await call(a.token, 'POST', '/webhooks', { url: 'https://hooks.example.com/p' })),
      [403, 'step_up_required'],
      'nothing allowed by the refusals',
    );
    const allowed = await postForm(app, '/account/connected-apps/allow-changes', { grant }, { cookie });
    t.equal(allowed.statusCode, 303);
    t.equal(allowed.headers.location, '/account/connected-apps');
    const status = (await call(a.token, 'GET', '/security/step-up')).json();
    t.equal(status.elevated, true);
    t.ok(Math.abs(Date.parse(status.elevatedUntil) - (Date.now() + 3_600_000)) < 60_000, 'for 60 minutes');
    t.equal((await call(a.token, 'POST', '/webhooks', { url: 'https://hooks.example.com/p' })).statusCode, 201);
    const after = await pageOf();
    const shown = after.slice(after.indexOf('<strong>Page elevation</strong>'));
    t.match(shown.slice(0, shown.indexOf('</li>')), 'Changes allowed until');
  });

  t.test('two-factor on: authenticator and backup codes; the same code never twice', async (t) => {
    const a = await connectApp('Authenticator');
    const off = await ask(a.token, { method: 'totp' });
    t.same(errorOf(off), [422, 'invalid_parameter'], 'no authenticator while two-factor is off');
    t.equal(off.json().error.param, 'method');

    const setup = await postForm(app, '/account/two-factor', {}, { cookie });
    const secret = /Key: <code>([A-Z2-7]+)<\/code>/.exec(setup.body)![1]!;
    const now = Math.floor(Date.now() / 1000);
    const confirmed = await postForm(
      app,
      '/account/two-factor/confirm',
      { code: await generate({ secret, epoch: now - 30 }) },
      { cookie },
    );
    const backupCodes = [...confirmed.body.matchAll(/<li><code>([a-z0-9-]+)<\/code><\/li>/g)].map((m) => m[1]!);
    t.equal(backupCodes.length, 10);

    t.equal((await call(a.token, 'GET', '/security/step-up')).json().method, 'totp');
    const mails = stepUpMails().length;
    t.same((await ask(a.token)).json(), { object: 'step_up_challenge', method: 'totp', reused: false });
    t.equal(stepUpMails().length, mails, 'nothing mailed');
    const totp = await generate({ secret, epoch: now });
    t.same(errorOf(await verify(a.token, '000000')), [400, 'step_up_code_invalid']);
    t.equal((await verify(a.token, totp)).statusCode, 200, 'the authenticator code elevates');

    const b = await connectApp('Authenticator, second app');
    await ask(b.token);
    t.same(errorOf(await verify(b.token, totp)), [400, 'step_up_code_invalid'], 'the same code never twice');
    t.equal((await verify(b.token, backupCodes[0]!)).statusCode, 200, 'a backup code elevates');
    await ask(b.token, { resend: true });
    t.same(errorOf(await verify(b.token, backupCodes[0]!)), [400, 'step_up_code_invalid'], 'once');
    t.equal((await ask(b.token, { method: 'email', resend: true })).json().method, 'email', 'email on request');
    t.equal((await verify(b.token, lastCode())).statusCode, 200);
  });
});
