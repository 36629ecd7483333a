import crypto from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import t from 'tap';
import { acceptInvitation } from '../../commands/members/handlers.ts';
import { findInvitation } from '../../projections/members/queries.ts';
import { challengeIn, formFields, pkce, postForm, sessionCookie } from '../support/accounts.ts';
import { startTestApp } from '../support/app.ts';

const CALLBACK = 'https://app.example.test/callback';

/**
 * Connecting an app over HTTP against the whole service, as an app and a browser would: the
 * person signs in (the mailed code is made from the server key, as the mail process makes it),
 * the app sends them to the authorization page with PKCE S256, the consent redirects back with a
 * code, the app exchanges it and calls the API with the token, refreshes it, and so on.
 */
t.test('OAuth apps: registration, the code flow with PKCE, tokens as credentials', async (t) => {
  const h = await startTestApp(t);
  const app = h.app;
  const ws = await h.workspace('Acme');
  const emailOf = async (userId: string) =>
    (await h.system.database.pool.query('SELECT email FROM accounts WHERE user_id = $1', [userId])).rows[0].email;
  const ownerEmail = await emailOf(ws.ownerUserId);

  const signIn = async (email: string) => {
    const challenge = challengeIn((await postForm(app, '/sign-in', { email })).body);
    const answered = await postForm(app, '/sign-in/code', {
      challenge,
      code: h.system.accounts.ports.codes.signInCode(challenge),
    });
    t.equal(answered.statusCode, 303, `${email} signed in`);
    return sessionCookie(answered);
  };
  const get = (url: string, cookie?: string) => app.inject({ method: 'GET', url, headers: cookie ? { cookie } : {} });
  const bearer = (token: string, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) =>
    app.inject({ method, url, headers: { authorization: `Bearer ${token}` }, ...(payload ? { payload } : {}) });
  const errorOf = (r: LightMyRequestResponse) => [r.statusCode, r.json().error?.code];
  const tokenCall = (fields: Record<string, string>) => postForm(app, '/oauth/token', fields);

  const ownerCookie = await signIn(ownerEmail);

  // Registration: a signed-in person, on a page of ours.
  t.equal((await get('/account/apps')).headers.location, '/sign-in', 'registering needs a session');
  const registered = await postForm(
    app,
    '/account/apps',
    { name: 'Mail <Helper>', redirect_uris: `${CALLBACK}\nhttp://127.0.0.1:8765/cb` },
    { cookie: ownerCookie },
  );
  t.equal(registered.statusCode, 201);
  const clientId = /<code id="client-id">([^<]+)<\/code>/.exec(registered.body)![1]!;
  t.match(clientId, /^app_[0-9a-f]{24}$/);
  t.match(registered.body, 'Mail &lt;Helper&gt;', 'the name escaped');
  t.match((await get('/account/apps', ownerCookie)).body, clientId, 'listed on the page');
  for (const [uris, why] of [
    ['http://app.example.test/cb', 'plain http off the machine'],
    ['https://app.example.test/cb#frag', 'a fragment'],
    ['/relative', 'not absolute'],
    [Array.from({ length: 11 }, (_, i) => `https://a.example.test/${i}`).join('\n'), 'eleven addresses'],
  ] as const) {
    const refused = await postForm(app, '/account/apps', { name: 'X', redirect_uris: uris }, { cookie: ownerCookie });
    t.equal(refused.statusCode, 400, why);
  }
  t.equal(
    (
      await postForm(
        app,
        '/account/apps',
        { name: 'Ten', redirect_uris: Array.from({ length: 10 }, (_, i) => `https://a.example.test/${i}`).join('\n') },
        { cookie: ownerCookie },
      )
    ).statusCode,
    201,
    'ten addresses are the most',
  );

  const authorizeUrl = (challenge: string, scope: string, extra: Record<string, string> = {}) =>
    `/oauth/authorize?${new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: CALLBACK,
      scope,
      state: 's-1',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      ...extra,
    })}`;

  /**
   * The browser's part: follows our redirects from the authorization request, approves on the
   * consent page, and stops at the redirect to the app, whose address it answers.
   */
  const connect = async (
    cookie: string | undefined,
    scope: string,
    approve: Record<string, string> = {},
  ): Promise<{ code: string; verifier: string; pages: string[] }> => {
    const { verifier, challenge } = pkce();
    const pages: string[] = [];
    let response = await get(authorizeUrl(challenge, scope), cookie);
    while (response.statusCode === 303 && String(response.headers.location).startsWith('/')) {
      pages.push(String(response.headers.location));
      response = await get(String(response.headers.location), cookie);
    }
    if (!cookie) return { code: '', verifier, pages };
    t.equal(response.statusCode, 200, 'the consent page');
    const answered = await postForm(
      app,
      '/oauth/authorize',
      { ...formFields(response.body), decision: 'approve', ...approve },
      { cookie },
    );
    t.equal(answered.statusCode, 303, 'back to the app');
    const back = new URL(String(answered.headers.location));
    t.equal(`${back.origin}${back.pathname}`, CALLBACK);
    t.equal(back.searchParams.get('state'), 's-1', 'the state comes back');
    return { code: back.searchParams.get('code')!, verifier, pages };
  };
  const exchange = (code: string, verifier: string) =>
    tokenCall({
      grant_type: 'authorization_code',
      code,
      redirect_uri: CALLBACK,
      client_id: clientId,
      code_verifier: verifier,
    });

  t.test('the whole flow: sign-in, consent, code, token, API, refresh, expiry', async (t) => {
    const stranger = await connect(undefined, 'roles:read');
    t.same(stranger.pages, ['/sign-in'], 'without a session the page sends the person to sign in');

    const url = authorizeUrl(pkce().challenge, 'roles:read');
    const away = await get(url);
    const back = String(away.headers['set-cookie']).split(';')[0]!;
    t.equal(back, `wms_return=${encodeURIComponent(url)}`, 'remembering the way back');
    const challenge = challengeIn((await postForm(app, '/sign-in', { email: ownerEmail }, { cookie: back })).body);
    const signedIn = await postForm(
      app,
      '/sign-in/code',
      { challenge, code: h.system.accounts.ports.codes.signInCode(challenge) },
      { cookie: back },
    );
    t.equal(signedIn.headers.location, url, 'signed in, back to the consent');
    const cookies = signedIn.headers['set-cookie'] as string[];
    t.match(cookies[1], /^wms_return=; Path=\/; Max-Age=0;/, 'the way back is used once');
    t.equal((await get(url, cookies[0]!.split(';')[0]!)).statusCode, 200, 'the consent page');
    const elsewhere = await postForm(
      app,
      '/sign-in',
      { email: ownerEmail },
      { cookie: 'wms_return=https%3A%2F%2Fevil.example' },
    );
    const c2 = challengeIn(elsewhere.body);
    const notAway = await postForm(
      app,
      '/sign-in/code',
      { challenge: c2, code: h.system.accounts.ports.codes.signInCode(c2) },
      { cookie: 'wms_return=https%3A%2F%2Fevil.example' },
    );
    t.equal(notAway.headers.location, '/account', 'a way back elsewhere is ignored');

    const consent = await get(authorizeUrl(pkce().challenge, 'roles:write members:write'), ownerCookie);
    t.match(consent.body, 'Mail &lt;Helper&gt;');
    t.match(consent.body, '<code>members:read</code>', 'implied scopes shown');
    t.match(String(consent.headers['content-security-policy']), "form-action 'self' https://app.example.test");

    const { code, verifier } = await connect(ownerCookie, 'roles:read members:read');
    const tokens = await exchange(code, verifier);
    t.equal(tokens.statusCode, 200, tokens.body);
    const body = tokens.json();
    t.equal(body.token_type, 'Bearer');
    t.match(body.access_token, /^wmo_at_[\w-]{43}$/);
    t.match(body.refresh_token, /^wmo_rt_[\w-]{43}$/);
    t.ok(body.expires_in > 3590 && body.expires_in <= 3600, 'an hour');
    t.equal(tokens.headers['cache-control'], 'no-store');
    t.equal((await exchange(code, verifier)).json().error, 'invalid_grant', 'a code works once');

    const self = (await bearer(body.access_token, 'GET', '/keys/self')).json();
    t.same(
      { ...self, expiresAt: typeof self.expiresAt },
      {
        object: 'oauth_token',
        kind: 'oauth',
        id: null,
        mode: 'live',
        scopes: ['members:read', 'roles:read'],
        grantedScopes: ['members:read', 'roles:read'],
        roleId: null,
        workspaceId: ws.workspaceId,
        addressAllowlist: null,
        domainAllowlist: null,
        clientId,
        expiresAt: 'string',
      },
    );
    const days = (Date.parse(self.expiresAt) - Date.now()) / 86_400_000;
    t.ok(days > 89.9 && days <= 90, 'expiresAt is the approval, 90 days, not the token');
    const ping = (await bearer(body.access_token, 'GET', '/ping')).json();
    t.same(ping, {
      ok: true,
      kind: 'oauth',
      keyId: null,
      mode: 'live',
      scopes: ['members:read', 'roles:read'],
      grantedScopes: ['members:read', 'roles:read'],
      roleId: null,
      workspaceId: ws.workspaceId,
      clientId,
    });
    const members = await bearer(body.access_token, 'GET', '/members');
    t.equal(members.statusCode, 200, 'an API call with the token');
    t.equal(members.json().data[0].email, ownerEmail);
    t.same(errorOf(await bearer(body.access_token, 'GET', '/webhooks')), [403, 'insufficient_scope']);

    const refreshed = await tokenCall({
      grant_type: 'refresh_token',
      refresh_token: body.refresh_token,
      client_id: clientId,
    });
    t.equal(refreshed.statusCode, 200);
    const renewed = refreshed.json();
    t.not(renewed.refresh_token, body.refresh_token, 'the refresh token rotates');
    t.equal((await bearer(renewed.access_token, 'GET', '/roles')).statusCode, 200);
    const again = await tokenCall({
      grant_type: 'refresh_token',
      refresh_token: body.refresh_token,
      client_id: clientId,
    });
    t.same([again.statusCode, again.json().error], [400, 'invalid_grant'], 'the old refresh token is spent');

    await h.system.database.pool.query(
      "UPDATE oauth_access_tokens SET expires_at = now() - interval '1 second' WHERE token_hash = encode(sha256($1::bytea), 'hex')",
      [renewed.access_token],
    );
    t.same(errorOf(await bearer(renewed.access_token, 'GET', '/roles')), [401, 'expired_access_token']);
    const third = await tokenCall({
      grant_type: 'refresh_token',
      refresh_token: renewed.refresh_token,
      client_id: clientId,
    });
    t.equal((await bearer(third.json().access_token, 'GET', '/roles')).statusCode, 200, 'renewed after expiry');

    t.same(errorOf(await bearer('wmo_at_unknown', 'GET', '/roles')), [401, 'invalid_access_token']);
    t.same(errorOf(await bearer(`wmo_at_${'x'.repeat(43)}`, 'GET', '/keys/self')), [401, 'invalid_access_token']);
  });

  t.test('refusals: wrong verifier, unregistered redirect, no PKCE, console-only scope, denial', async (t) => {
    const { code } = await connect(ownerCookie, 'roles:read');
    const wrong = await exchange(code, pkce().verifier);
    t.same([wrong.statusCode, wrong.json().error], [400, 'invalid_grant'], 'another verifier');
    const noVerifier = await tokenCall({
      grant_type: 'authorization_code',
      code,
      redirect_uri: CALLBACK,
      client_id: clientId,
    });
    t.same([noVerifier.statusCode, noVerifier.json().error], [400, 'invalid_grant'], 'no verifier');

    const other = await get(
      authorizeUrl(pkce().challenge, 'roles:read', { redirect_uri: 'https://evil.example.test/cb' }),
      ownerCookie,
    );
    t.equal(other.statusCode, 400, 'a redirect address not registered');
    t.equal(other.headers.location, undefined, 'and never redirected to');
    t.match(other.body, 'did not register');
    t.equal(
      (await get(authorizeUrl(pkce().challenge, 'roles:read', { client_id: 'app_nope' }), ownerCookie)).statusCode,
      400,
    );

    const back = async (url: string) => new URL(String((await get(url, ownerCookie)).headers.location)).searchParams;
    t.equal(
      (await back(authorizeUrl('', 'roles:read', { code_challenge_method: 'S256' }))).get('error'),
      'invalid_request',
      'PKCE is required',
    );
    t.equal(
      (await back(authorizeUrl(pkce().challenge, 'roles:read', { code_challenge_method: 'plain' }))).get('error'),
      'invalid_request',
      'plain is not taken',
    );
    const consoleOnly = await back(authorizeUrl(pkce().challenge, 'roles:read api-keys:write'));
    t.equal(consoleOnly.get('error'), 'invalid_scope', 'a console-only permission is never approved');
    t.match(consoleOnly.get('error_description'), 'api-keys:write');
    t.equal((await back(authorizeUrl(pkce().challenge, 'roles:read nonsense'))).get('error'), 'invalid_scope');
    t.equal((await back(authorizeUrl(pkce().challenge, ''))).get('error'), 'invalid_scope', 'no scope');

    const page = await get(authorizeUrl(pkce().challenge, 'roles:read'), ownerCookie);
    const denied = await postForm(
      app,
      '/oauth/authorize',
      { ...formFields(page.body), decision: 'deny' },
      { cookie: ownerCookie },
    );
    const deniedAt = new URL(String(denied.headers.location));
    t.same([deniedAt.searchParams.get('error'), deniedAt.searchParams.get('state')], ['access_denied', 's-1']);

    const narrowed = await postForm(
      app,
      '/oauth/authorize',
      { ...formFields(page.body), decision: 'approve', domains: 'not-ours.example' },
      { cookie: ownerCookie },
    );
    t.equal(narrowed.statusCode, 400, 'narrowing to a domain of another workspace');
    t.match(narrowed.body, 'Not in this workspace: not-ours.example');
    const foreign = await h.workspace();
    const elsewhere = await postForm(
      app,
      '/oauth/authorize',
      { ...formFields(page.body), decision: 'approve', workspace: foreign.workspaceId },
      { cookie: ownerCookie },
    );
    t.equal(elsewhere.statusCode, 400, 'a workspace the person is not in');
    const forged = await postForm(
      app,
      '/oauth/authorize',
      { ...formFields(page.body), decision: 'approve' },
      { cookie: ownerCookie, 'sec-fetch-site': 'cross-site' },
    );
    t.equal(forged.statusCode, 403, 'a consent posted from another site');
  });

  t.test('edges: an expired code, a JSON token request, a foreign id, step-up', async (t) => {
    const late = await connect(ownerCookie, 'roles:read members:read webhooks:write');
    await h.system.database.pool.query("UPDATE oauth_codes SET expires_at = now() - interval '1 second'");
    const expired = await exchange(late.code, late.verifier);
    t.same([expired.statusCode, expired.json().error], [400, 'invalid_grant'], 'a code past its minute');

    const { code, verifier } = await connect(ownerCookie, 'roles:read members:read webhooks:write');
    const json = await app.inject({
      method: 'POST',
      url: '/oauth/token',
      payload: {
        grant_type: 'authorization_code',
        code,
        redirect_uri: CALLBACK,
        client_id: clientId,
        code_verifier: verifier,
      },
    });
    t.same([json.statusCode, json.json().error], [400, 'invalid_request'], 'the token endpoint takes forms only');
    const token = (await exchange(code, verifier)).json().access_token;

    const foreign = await h.workspace();
    t.same(
      errorOf(await bearer(token, 'GET', `/members/${foreign.ownerUserId}`)),
      [404, 'resource_not_found'],
      "another workspace's member",
    );
    t.same(
      errorOf(await bearer(token, 'POST', '/webhooks', { url: 'https://hooks.example.com/x' })),
      [403, 'step_up_required'],
      'a sensitive change asks an unelevated token for step-up',
    );
  });

  t.test('races: two exchanges of one code, two uses of one refresh token: one winner each', async (t) => {
    const { code, verifier } = await connect(ownerCookie, 'roles:read');
    const exchanged = await Promise.all([exchange(code, verifier), exchange(code, verifier)]);
    t.same(exchanged.map((r) => r.statusCode).sort(), [200, 400]);
    const tokens = exchanged.find((r) => r.statusCode === 200)!.json();
    const refresh = () =>
      tokenCall({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: clientId });
    const refreshed = await Promise.all([refresh(), refresh(), refresh()]);
    t.same(refreshed.map((r) => r.statusCode).sort(), [200, 400, 400]);
  });

  t.test('revocation by the app, disconnection by the person, connecting again', async (t) => {
    const first = await connect(ownerCookie, 'roles:read');
    const a = (await exchange(first.code, first.verifier)).json();
    const revoke = (token: string, client = clientId) => postForm(app, '/oauth/revoke', { token, client_id: client });
    t.equal((await revoke(a.access_token, 'app_someone_else')).statusCode, 200, 'another app: answered alike');
    t.equal((await bearer(a.access_token, 'GET', '/roles')).statusCode, 200, 'and nothing revoked');
    t.equal((await revoke(a.access_token)).statusCode, 200);
    t.same(errorOf(await bearer(a.access_token, 'GET', '/roles')), [401, 'invalid_access_token'], 'a revoked token');
    t.equal((await revoke('wmo_at_never-issued')).statusCode, 200, 'an unknown token: answered alike');
    t.equal((await postForm(app, '/oauth/revoke', { token: 'x' })).statusCode, 400, 'no client_id');

    const renewed = (
      await tokenCall({ grant_type: 'refresh_token', refresh_token: a.refresh_token, client_id: clientId })
    ).json();
    t.equal((await bearer(renewed.access_token, 'GET', '/roles')).statusCode, 200);
    await revoke(renewed.refresh_token);
    t.same(
      errorOf(await bearer(renewed.access_token, 'GET', '/roles')),
      [401, 'invalid_access_token'],
      "a refresh token's access tokens go with it",
    );
    const spent = await tokenCall({
      grant_type: 'refresh_token',
      refresh_token: renewed.refresh_token,
      client_id: clientId,
    });
    t.equal(spent.json().error, 'invalid_grant');

    const second = await connect(ownerCookie, 'roles:read');
    const b = (await exchange(second.code, second.verifier)).json();
    const list = await get('/account/connected-apps', ownerCookie);
    t.equal(list.statusCode, 200);
    t.match(list.body, 'Mail &lt;Helper&gt;</strong> in Acme');
    const grant = /name="grant" value="([^"]+)"/.exec(list.body)![1]!;
    const stranger = await h.workspace();
    const strangerCookie = await signIn(await emailOf(stranger.ownerUserId));
    t.equal(
      (await postForm(app, '/account/connected-apps/disconnect', { grant }, { cookie: strangerCookie })).statusCode,
      404,
      "another person's approval",
    );
    t.equal((await bearer(b.access_token, 'GET', '/roles')).statusCode, 200, 'still connected');
    const out = await postForm(app, '/account/connected-apps/disconnect', { grant }, { cookie: ownerCookie });
    t.equal(out.headers.location, '/account/connected-apps');
    t.same(errorOf(await bearer(b.access_token, 'GET', '/roles')), [401, 'grant_required'], 'disconnected');
    const after = await tokenCall({ grant_type: 'refresh_token', refresh_token: b.refresh_token, client_id: clientId });
    t.equal(after.json().error, 'invalid_grant', 'and no renewal');
    t.match((await get('/account/connected-apps', ownerCookie)).body, 'No app is connected.');

    const third = await connect(ownerCookie, 'roles:read');
    const c = (await exchange(third.code, third.verifier)).json();
    t.equal((await bearer(c.access_token, 'GET', '/roles')).statusCode, 200, 'connected again');
    t.same(
      errorOf(await bearer(b.access_token, 'GET', '/roles')),
      [401, 'invalid_access_token'],
      'the tokens from before the disconnection stay dead',
    );
  });

  t.test('the sweep deletes spent and expired codes and tokens, and keeps what still works or renews', async (t) => {
    const pool = h.system.database.pool;
    const digest = (secret: string) => crypto.createHash('sha256').update(secret).digest('hex');
    const unused = await connect(ownerCookie, 'roles:read');
    const { code, verifier } = await connect(ownerCookie, 'roles:read');
    const first = (await exchange(code, verifier)).json();
    const second = (
      await tokenCall({ grant_type: 'refresh_token', refresh_token: first.refresh_token, client_id: clientId })
    ).json();
    const has = async (table: string, column: string, secret: string) =>
      (await pool.query(`SELECT 1 FROM ${table} WHERE ${column} = $1`, [digest(secret)])).rowCount === 1;
    const kept = async () => ({
      code: await has('oauth_codes', 'code_hash', unused.code),
      access: [
        await has('oauth_access_tokens', 'token_hash', first.access_token),
        await has('oauth_access_tokens', 'token_hash', second.access_token),
      ],
      refresh: [
        await has('oauth_refresh_tokens', 'token_hash', first.refresh_token),
        await has('oauth_refresh_tokens', 'token_hash', second.refresh_token),
      ],
    });
    const after = (ms: number) => h.system.oauth.sweep(new Date(Date.now() + ms));
    const DAY = 86_400_000;
    await after(0);
    t.same(await kept(), { code: true, access: [true, true], refresh: [true, true] }, 'nothing spent long enough');
    await after(2 * 60_000);
    t.same(await kept(), { code: false, access: [true, true], refresh: [true, true] }, 'a code past its minute');
    await after(2 * DAY);
    t.same(
      await kept(),
      { code: false, access: [true, true], refresh: [false, true] },
      'a refresh token a day after its use; expired access tokens stay while a refresh could renew them',
    );
    await after(32 * DAY);
    t.same(await kept(), { code: false, access: [false, false], refresh: [false, false] }, 'past renewal, all go');
  });

  t.test('a member: role changes narrow the token, removal and expiry end it', async (t) => {
    const role = async (name: string, permissions: string[]) =>
      (await h.request(ws.apiKey, 'POST', '/roles', { name, permissions })).json().id;
    const readers = await role('Readers', ['members:read', 'roles:read']);
    const fewer = await role('Fewer', ['roles:read']);
    // The Admin role: addresses:all is console-only, so no role made through the API holds it.
    const admin = (await h.request(ws.apiKey, 'GET', '/roles?limit=100'))
      .json()
      .data.find((r: { builtin: string | null }) => r.builtin === 'admin').id;
    const email = 'ann@example.org';
    const invited = (await h.request(ws.apiKey, 'POST', '/members', { email, roleId: readers })).json();
    const invitation = await findInvitation(h.system.readDb, ws.workspaceId, invited.id);
    await acceptInvitation(
      h.system.commands,
      { workspaceId: ws.workspaceId, invitationId: invited.id, nonce: invitation!.nonce, email },
      new Date().toISOString(),
    );
    const userId = (await h.system.database.pool.query('SELECT user_id FROM accounts WHERE email = $1', [email]))
      .rows[0].user_id;
    const cookie = await signIn(email);
    const { code, verifier } = await connect(cookie, 'members:read roles:read emails:read settings:write');
    const tokens = (await exchange(code, verifier)).json();
    const self = (await bearer(tokens.access_token, 'GET', '/keys/self')).json();
    t.same(self.grantedScopes, ['emails:read', 'members:read', 'roles:read', 'settings:write'], 'what was approved');
    t.same(self.scopes, ['members:read', 'roles:read'], 'within what the role holds');
    t.same([self.addressAllowlist, self.domainAllowlist], [[], []], 'no address granted: reaches none');
    t.equal((await bearer(tokens.access_token, 'GET', '/roles')).statusCode, 200);

    t.equal((await h.request(ws.apiKey, 'PATCH', `/members/${userId}`, { roleId: fewer })).statusCode, 200);
    t.same(
      errorOf(await bearer(tokens.access_token, 'GET', '/members')),
      [403, 'insufficient_scope'],
      'the next request follows the new role',
    );
    t.same((await bearer(tokens.access_token, 'GET', '/keys/self')).json().scopes, ['roles:read']);

    t.equal((await h.request(ws.apiKey, 'PATCH', `/members/${userId}`, { roleId: admin })).statusCode, 200);
    const widened = (await bearer(tokens.access_token, 'GET', '/keys/self')).json();
    t.same(
      [widened.scopes, widened.addressAllowlist, widened.domainAllowlist],
      [['emails:read', 'members:read', 'roles:read', 'settings:write'], null, null],
      'addresses:all reaches every address; never the console-only permission itself',
    );
    t.same(
      errorOf(await bearer(tokens.access_token, 'POST', '/suppressions', { email: 'x@example.net' })),
      [422, 'capability_unsupported'],
      'an app connected by a member, not the owner, adds no suppression',
    );
    const mine = await connect(ownerCookie, 'settings:write');
    const ownerToken = (await exchange(mine.code, mine.verifier)).json().access_token;
    t.equal(
      (await bearer(ownerToken, 'POST', '/suppressions', { email: 'x@example.net' })).statusCode,
      201,
      "the owner's app adds one",
    );

    await h.system.database.pool.query(
      "UPDATE oauth_grants SET expires_at = now() - interval '1 second' WHERE user_id = $1",
      [userId],
    );
    t.same(errorOf(await bearer(tokens.access_token, 'GET', '/roles')), [401, 'grant_expired']);
    await h.system.database.pool.query(
      "UPDATE oauth_grants SET expires_at = now() + interval '1 day' WHERE user_id = $1",
      [userId],
    );

    t.equal((await h.request(ws.apiKey, 'DELETE', `/members/${userId}`)).statusCode, 200);
    t.same(
      errorOf(await bearer(tokens.access_token, 'GET', '/roles')),
      [401, 'grant_access_lost'],
      'removed from the workspace',
    );
    const refresh = await tokenCall({
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token,
      client_id: clientId,
    });
    t.same([refresh.statusCode, refresh.json().error], [400, 'invalid_grant'], 'and no renewal');
  });
});
