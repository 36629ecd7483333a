import t from 'tap';
import { acceptInvitation } from '../../commands/members/handlers.ts';
import { findInvitation } from '../../projections/members/queries.ts';
import { challengeIn, formFields, pkce, postForm, sessionCookie } from '../support/accounts.ts';
import { errorOf } from '../support/domains.ts';
import { startSendingApp } from '../support/emails.ts';

const CALLBACK = 'https://app.example.test/callback';

/**
 * The spec's `viewer` grant (Member): it blocks sending from its addresses even when the role
 * holds `emails:send`, unless the role holds `addresses:all`. Driven as an app would: a member
 * invited with `access: viewer` connects it through the code flow with PKCE, and the token sends.
 */
t.test('an app of a member sends only where the grants say member', async (t) => {
  const { h, setUp } = await startSendingApp(t);
  const { ws, a, b, domain } = await setUp('example.com');
  const app = h.app;
  const key = ws.apiKey;

  const signIn = async (email: string) => {
    const challenge = challengeIn((await postForm(app, '/sign-in', { email })).body);
    const answered = await postForm(app, '/sign-in/code', {
      challenge,
      code: h.system.accounts.ports.codes.signInCode(challenge),
    });
    t.equal(answered.statusCode, 303, `${email} signed in`);
    return sessionCookie(answered);
  };

  const roles = (await h.request(key, 'GET', '/roles?limit=100')).json().data as { id: string; builtin: string }[];
  const roleOf = (builtin: string) => roles.find((r) => r.builtin === builtin)!.id;
  const email = 'vera@example.org';
  const invited = await h.request(key, 'POST', '/members', {
    email,
    roleId: roleOf('member'),
    addressIds: [a.id],
    access: 'viewer',
  });
  t.equal(invited.statusCode, 201, invited.body);
  const invitation = await findInvitation(h.system.readDb, ws.workspaceId, invited.json().id);
  await acceptInvitation(
    h.system.commands,
    { workspaceId: ws.workspaceId, invitationId: invited.json().id, nonce: invitation!.nonce, email },
    new Date().toISOString(),
  );
  const userId = (await h.system.database.pool.query('SELECT user_id FROM accounts WHERE email = $1', [email])).rows[0]
    .user_id as string;
  const cookie = await signIn(email);

  const registered = await postForm(app, '/account/apps', { name: 'Sender', redirect_uris: CALLBACK }, { cookie });
  t.equal(registered.statusCode, 201);
  const clientId = /<code id="client-id">([^<]+)<\/code>/.exec(registered.body)![1]!;
  const { verifier, challenge } = pkce();
  const authorize = `/oauth/authorize?${new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: CALLBACK,
    scope: 'emails:send emails:read drafts:read drafts:write',
    state: 's',
    code_challenge: challenge,
    code_challenge_method: 'S256',
  })}`;
  const consent = await app.inject({ method: 'GET', url: authorize, headers: { cookie } });
  t.equal(consent.statusCode, 200, 'the consent page');
  const approved = await postForm(
    app,
    '/oauth/authorize',
    { ...formFields(consent.body), decision: 'approve' },
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
  t.equal(tokens.statusCode, 200, tokens.body);
  const token = tokens.json().access_token as string;

  const message = { to: 'x@example.org', subject: 'Hello', text: 'Body' };
  const send = (from: string) => h.request(token, 'POST', '/emails', { ...message, from });
  const grant = (kind: 'addresses' | 'domains', id: string, access: 'member' | 'viewer') =>
    h.request(key, 'PUT', `/members/${userId}/${kind}/${id}`, { access });

  t.test('a viewer grant: reads, but sends from nothing it covers', async (t) => {
    t.same((await h.request(token, 'GET', '/keys/self')).json().addressAllowlist, ['a@example.com'], 'reaches a@');
    t.equal((await h.request(token, 'GET', '/emails')).statusCode, 200, 'reads');
    t.same(
      errorOf(await send('a@example.com')),
      [403, 'from_address_forbidden', 'from'],
      'the role sends; the grant does not',
    );
    t.match((await send('A@Example.com')).json().error.message, /viewer/, 'whatever the case; says why');
    const batch = await h.request(token, 'POST', '/emails/batch', { emails: [{ ...message, from: 'a@example.com' }] });
    t.equal(batch.statusCode, 200);
    t.match(batch.json().data[0], { email: null, error: { code: 'from_address_forbidden', param: 'from' } });
    const draft = await h.request(token, 'POST', '/drafts', { ...message, from: 'a@example.com' });
    t.equal(draft.statusCode, 201, 'a draft is not a send');
    t.same(
      errorOf(await h.request(token, 'POST', `/drafts/${draft.json().id}/send`)),
      [403, 'from_address_forbidden', 'from'],
      'sending it is',
    );
    const kept = await h.request(token, 'GET', `/drafts/${draft.json().id}`);
    t.equal(kept.statusCode, 200, 'the draft stays');
  });

  t.test('a member grant sends; the address grant decides over a viewer domain', async (t) => {
    t.equal((await grant('addresses', b.id, 'member')).statusCode, 200);
    t.equal((await send('b@example.com')).statusCode, 201, 'the next request follows the new grant');
    t.same(errorOf(await send('a@example.com')), [403, 'from_address_forbidden', 'from'], 'a@ still viewer');
    t.equal((await grant('domains', domain.id, 'viewer')).statusCode, 200);
    const c = await h.request(key, 'POST', '/addresses', { address: 'c@example.com' });
    t.equal(c.statusCode, 201);
    t.same(errorOf(await send('c@example.com')), [403, 'from_address_forbidden', 'from'], 'a later address too');
    t.equal((await send('b@example.com')).statusCode, 201, "b@'s own grant is member");
    t.equal((await grant('addresses', a.id, 'member')).statusCode, 200);
    t.equal((await send('a@example.com')).statusCode, 201, 'a@ changed to member sends');
    t.equal((await grant('addresses', a.id, 'viewer')).statusCode, 200, 'and back');
  });

  t.test('a role with addresses:all sends from every address, viewer grants or not', async (t) => {
    t.equal((await h.request(key, 'PATCH', `/members/${userId}`, { roleId: roleOf('admin') })).statusCode, 200);
    t.equal((await send('a@example.com')).statusCode, 201);
    t.equal((await send('c@example.com')).statusCode, 201);
    t.equal((await h.request(key, 'PATCH', `/members/${userId}`, { roleId: roleOf('member') })).statusCode, 200);
    t.same(errorOf(await send('a@example.com')), [403, 'from_address_forbidden', 'from'], 'back to Member: refused');
  });
});
