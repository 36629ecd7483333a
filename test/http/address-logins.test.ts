import t from 'tap';
import { printHistory } from '../../cli/history.ts';
import { verifyAppPassword } from '../../commands/addresses/passwords.ts';
import { addDomain } from '../../commands/domains/handlers.ts';
import { APP_PASSWORDS_MAX } from '../../domain/addresses/decide.ts';
import { mailboxLogin } from '../../projections/addresses/queries.ts';
import { startTestApp, type TestApp } from '../support/app.ts';

const errorOf = (res: { statusCode: number; json: () => any }) => [
  res.statusCode,
  res.json().error?.code,
  res.json().error?.param,
];

type Workspace = Awaited<ReturnType<TestApp['workspace']>>;
const domain = (h: TestApp, ws: Workspace, name: string) =>
  addDomain(
    h.system.commands,
    h.system.domains,
    { workspaceId: ws.workspaceId, kind: 'operator', id: null },
    { domain: name },
    new Date().toISOString(),
  );

async function address(h: TestApp, key: string, address: string) {
  const res = await h.request(key, 'POST', '/addresses', { address });
  if (res.statusCode !== 201) throw new Error(res.body);
  return res.json();
}

async function keyWith(h: TestApp, owner: string, body: object): Promise<string> {
  const res = await h.request(owner, 'POST', '/keys', body);
  if (res.statusCode !== 201) throw new Error(`key not created: ${res.body}`);
  return res.json().token;
}

t.test('logins and app passwords', async (t) => {
  const h = await startTestApp(t);
  const ws = await h.workspace();
  const other = await h.workspace();
  await domain(h, ws, 'example.com');
  await domain(h, other, 'example.org');
  const a = await address(h, ws.apiKey, 'jane@example.com');
  const b = await address(h, other.apiKey, 'bob@example.org');
  const login = (key: string, id: string, username: unknown) =>
    h.request(key, 'PUT', `/addresses/${id}/login`, { username });

  t.test('a login name: custom, unique across the service, or the address itself', async (t) => {
    const set = await login(ws.apiKey, a.id, ' Jane.D ');
    t.equal(set.statusCode, 200);
    t.same(set.json().login, { username: 'jane.d' });
    t.same(
      errorOf(await login(other.apiKey, b.id, 'jane.d')),
      [409, 'username_taken', 'username'],
      'another workspace',
    );
    t.same(errorOf(await login(ws.apiKey, a.id, 'x@y')), [422, 'invalid_parameter', 'username']);
    t.same(errorOf(await login(ws.apiKey, a.id, 'ab')), [422, 'invalid_parameter', 'username']);
    t.equal((await login(ws.apiKey, a.id, 'x'.repeat(64))).statusCode, 200, '64 characters');
    t.same(errorOf(await login(ws.apiKey, a.id, 'x'.repeat(65))), [422, 'invalid_parameter', 'username']);
    t.equal((await login(other.apiKey, b.id, 'jane.d')).statusCode, 200, 'a name let go is free again');
    t.same((await login(ws.apiKey, a.id, null)).json().login, { username: 'jane@example.com' });

    const racing = await Promise.all([login(ws.apiKey, a.id, 'shared'), login(other.apiKey, b.id, 'shared')]);
    t.same(racing.map((r) => r.statusCode).sort(), [200, 409], 'two addresses racing for a name: one gets it');
  });

  t.test('app passwords: shown once, stored hashed, the name locked while they exist', async (t) => {
    await login(ws.apiKey, a.id, 'jane.work');
    const res = await h.request(ws.apiKey, 'POST', `/addresses/${a.id}/app-passwords`, { name: ' Phone ' });
    t.equal(res.statusCode, 201);
    const pw = res.json();
    t.match(pw, { object: 'app_password', name: 'Phone', username: 'jane.work' });
    t.match(pw.id, /^apw_[0-9a-f]{24}$/);
    t.match(pw.password, /^[a-z]{4} [a-z]{4} [a-z]{4} [a-z]{4}$/);
    const read = await h.request(ws.apiKey, 'GET', `/addresses/${a.id}`);
    t.same(read.json().appPasswords, [{ object: 'app_password', id: pw.id, name: 'Phone', createdAt: pw.createdAt }]);
    t.notOk(read.body.includes(pw.password.replace(/ /g, '')) || read.body.includes(pw.password), 'never read back');

    const mailbox = (await mailboxLogin(h.system.readDb, 'Jane.Work'))!;
    t.equal(mailbox.address.id, a.id);
    t.equal(mailbox.passwordHashes.length, 1);
    t.match(mailbox.passwordHashes[0], /^scrypt\$16384\$8\$1\$/);
    t.ok(await verifyAppPassword(pw.password, mailbox.passwordHashes[0]!), 'the password checks');
    t.ok(await verifyAppPassword(pw.password.replace(/ /g, '').toUpperCase(), mailbox.passwordHashes[0]!));
    t.notOk(await verifyAppPassword('aaaa bbbb cccc dddd', mailbox.passwordHashes[0]!));
    t.equal(await mailboxLogin(h.system.readDb, 'jane@example.com'), undefined, 'a custom name replaces the address');

    const lines: string[] = [];
    await printHistory(h.system, { workspaceId: ws.workspaceId }, (l) => lines.push(l));
    const created = lines.find((l) => l.includes('"AppPasswordCreated"'))!;
    t.match(created, /"passwordHash":"\[redacted\]"/, 'the audit replay never prints the hash');
    t.notOk(lines.join('\n').includes(mailbox.passwordHashes[0]!));

    t.same(errorOf(await login(ws.apiKey, a.id, 'jane.other')), [409, 'username_locked', 'username']);
    t.equal((await login(ws.apiKey, a.id, 'jane.work')).statusCode, 200, 'the same name is no change');
    t.same(errorOf(await h.request(ws.apiKey, 'POST', `/addresses/${a.id}/app-passwords`, { name: '' })), [
      422,
      'invalid_parameter',
      'name',
    ]);

    const revoked = await h.request(ws.apiKey, 'DELETE', `/addresses/${a.id}/app-passwords/${pw.id}`);
    t.same(revoked.json(), { object: 'app_password', id: pw.id, deleted: true });
    t.same((await mailboxLogin(h.system.readDb, 'jane.work'))!.passwordHashes, []);
    t.same(errorOf(await h.request(ws.apiKey, 'DELETE', `/addresses/${a.id}/app-passwords/${pw.id}`)), [
      404,
      'resource_not_found',
      'appPasswordId',
    ]);
    t.equal((await login(ws.apiKey, a.id, 'jane.other')).statusCode, 200, 'unlocked once none is left');
  });

  t.test('twenty app passwords per address, at the edge and one past', async (t) => {
    const c = await address(h, ws.apiKey, 'many@example.com');
    for (let i = 0; i < APP_PASSWORDS_MAX - 1; i++)
      await h.request(ws.apiKey, 'POST', `/addresses/${c.id}/app-passwords`, { name: `p${i}` });
    t.equal(
      (await h.request(ws.apiKey, 'POST', `/addresses/${c.id}/app-passwords`, { name: 'last' })).statusCode,
      201,
      'the twentieth',
    );
    t.same(errorOf(await h.request(ws.apiKey, 'POST', `/addresses/${c.id}/app-passwords`, { name: 'more' })), [
      422,
      'workspace_limit_reached',
      null,
    ]);
    t.equal((await h.request(ws.apiKey, 'GET', `/addresses/${c.id}`)).json().appPasswords.length, APP_PASSWORDS_MAX);
    // Deleting the address takes its passwords and login with it.
    await login(ws.apiKey, c.id, 'many.login');
    t.equal((await h.request(ws.apiKey, 'DELETE', `/addresses/${c.id}`)).statusCode, 200);
    t.equal(await mailboxLogin(h.system.readDb, 'many@example.com'), undefined);
    t.equal(await mailboxLogin(h.system.readDb, 'many.login'), undefined);
    t.equal((await login(other.apiKey, b.id, 'many.login')).statusCode, 200, 'the name is free again');
  });

  t.test('who may hand out a login: emails:send too; narrowed keys; foreign ids', async (t) => {
    const noSend = await keyWith(h, ws.apiKey, { scopes: ['domains:read', 'domains:write'] });
    t.same(errorOf(await login(noSend, a.id, 'nope.name')), [403, 'mailbox_login_forbidden', null]);
    t.same(errorOf(await h.request(noSend, 'POST', `/addresses/${a.id}/app-passwords`, { name: 'x' })), [
      403,
      'mailbox_login_forbidden',
      null,
    ]);
    const scopes = ['domains:read', 'domains:write', 'emails:send'];
    const narrowed = await keyWith(h, ws.apiKey, { scopes, addressAllowlist: ['someone@example.com'] });
    t.same(errorOf(await login(narrowed, a.id, 'nope.name')), [404, 'resource_not_found', 'id']);
    const reaching = await keyWith(h, ws.apiKey, { scopes, addressAllowlist: ['jane@example.com'] });
    t.equal((await h.request(reaching, 'POST', `/addresses/${a.id}/app-passwords`, { name: 'ok' })).statusCode, 201);
    t.same(errorOf(await login(other.apiKey, a.id, 'nope.name')), [404, 'resource_not_found', 'id']);
    t.same(errorOf(await h.request(other.apiKey, 'POST', `/addresses/${a.id}/app-passwords`, { name: 'x' })), [
      404,
      'resource_not_found',
      'id',
    ]);
  });
});
