import t from 'tap';
import { addDomain } from '../../commands/domains/handlers.ts';
import { PENDING_INVITATION_LIMIT } from '../../domain/members/decide.ts';
import { PERMISSIONS } from '../../domain/shared/permissions.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { eventually } from '../support/receiver.ts';
import { startSmtpServer } from '../support/smtp.ts';

const PUBLIC = 'https://mail.example.net';
type Workspace = Awaited<ReturnType<TestApp['workspace']>>;
type Reply = Awaited<ReturnType<TestApp['request']>>;
const errorOf = (res: Reply) => [res.statusCode, res.json().error?.code, res.json().error?.param];
const form = { 'content-type': 'application/x-www-form-urlencoded' };

t.test('members over HTTP', async (t) => {
  const smtp = await startSmtpServer(t);
  const h = await startTestApp(t, {
    smtpUrl: smtp.url,
    forwardConsent: { publicUrl: PUBLIC },
    // The shared machine is slow; a late read model would answer 503 to a write that was stored.
    readModelDeadlineMs: 60_000,
  });

  const ok = async (res: Promise<Reply>, status = 200) => {
    const r = await res;
    if (r.statusCode !== status) throw new Error(`${r.statusCode} ${r.body}`);
    return r.json();
  };
  const rolesOf = async (ws: Workspace) =>
    Object.fromEntries(
      (await ok(h.request(ws.apiKey, 'GET', '/roles?limit=100'))).data.map((r: any) => [r.builtin ?? r.name, r]),
    );
  /** The newest acceptance link mailed to `to`. */
  const linkTo = (to: string, n = 1) =>
    eventually(async () => {
      const links = smtp.mails
        .filter((m) => m.to.includes(to))
        .map((m) => new RegExp(`${PUBLIC}(/invitations/\\S+)`).exec(m.text)?.[1])
        .filter((l): l is string => l !== undefined);
      return links.length >= n && links.at(-1)!;
    });
  const accept = (path: string) => h.app.inject({ method: 'POST', url: path, payload: '', headers: form });
  const invite = (ws: Workspace, body: Record<string, unknown>) => h.request(ws.apiKey, 'POST', '/members', body);
  /** Invites and accepts: the new member's userId. */
  const join = async (ws: Workspace, email: string, roleId: string) => {
    await ok(invite(ws, { email, roleId }), 201);
    const res = await accept(await linkTo(email));
    if (res.statusCode !== 200) throw new Error(`accept: ${res.statusCode} ${res.body}`);
    const list = await ok(h.request(ws.apiKey, 'GET', '/members?limit=100'));
    return list.data.find((m: any) => m.email === email).userId as string;
  };

  const ws = await h.workspace();
  const foreign = await h.workspace();
  await addDomain(
    h.system.commands,
    h.system.domains,
    { workspaceId: ws.workspaceId, kind: 'operator', id: null },
    {
      domain: 'example.com',
    },
    new Date().toISOString(),
  );
  const address = await ok(h.request(ws.apiKey, 'POST', '/addresses', { address: 'sales@example.com' }), 201);
  const domainId = (await ok(h.request(ws.apiKey, 'GET', '/domains'))).data[0].id as string;
  const roles = await rolesOf(ws);

  t.test('the owner is the first member; an invitation grants nothing until accepted', async (t) => {
    const before = await ok(h.request(ws.apiKey, 'GET', '/members'));
    t.equal(before.data.length, 1);
    t.match(before.data[0], {
      object: 'member',
      userId: ws.ownerUserId,
      isOwner: true,
      implied: false,
      role: { id: null, builtin: 'owner' },
      addresses: [],
      domains: [],
    });
    t.same(before.data[0].permissions, [...PERMISSIONS]);

    const sent = await ok(
      invite(ws, {
        email: 'Ann@Example.org',
        roleId: roles.member.id,
        addressIds: [address.id],
        domainIds: [domainId],
        access: 'viewer',
      }),
      201,
    );
    t.match(sent, { object: 'invitation', email: 'ann@example.org', roleId: roles.member.id, access: 'viewer' });
    t.equal((await ok(h.request(ws.apiKey, 'GET', '/members'))).data.length, 1, 'nobody added by inviting');

    const link = await linkTo('ann@example.org');
    t.equal((await h.app.inject({ method: 'GET', url: link })).statusCode, 200, 'the page opens');
    t.equal((await ok(h.request(ws.apiKey, 'GET', '/members'))).data.length, 1, 'opening the link changes nothing');
    t.equal((await accept(link)).statusCode, 200);
    const list = await ok(h.request(ws.apiKey, 'GET', '/members'));
    t.same(
      list.data.map((m: any) => m.email),
      ['owner1@example.com', 'ann@example.org'],
      'owner first, then by email',
    );
    const ann = list.data[1];
    t.match(ann, {
      isOwner: false,
      role: { id: roles.member.id, builtin: 'member' },
      permissions: roles.member.permissions,
      addresses: [{ addressId: address.id, address: 'sales@example.com', access: 'viewer' }],
      domains: [{ domainId, domain: 'example.com', access: 'viewer' }],
    });
    t.same(await ok(h.request(ws.apiKey, 'GET', `/members/${ann.userId}`)), ann);
    t.equal((await ok(h.request(ws.apiKey, 'GET', `/roles/${roles.member.id}`))).members, 1, 'role counts are real');
    t.equal((await accept(link)).statusCode, 404, 'a link works once');
  });

  t.test('two acceptances of one invitation: exactly one winner', async (t) => {
    await ok(invite(ws, { email: 'race@example.org', roleId: roles.viewer.id }), 201);
    const link = await linkTo('race@example.org');
    const answers = await Promise.all([accept(link), accept(link), accept(link)]);
    t.same(answers.map((a) => a.statusCode).sort(), [200, 404, 404]);
    const list = await ok(h.request(ws.apiKey, 'GET', '/members?limit=100'));
    t.equal(list.data.filter((m: any) => m.email === 'race@example.org').length, 1);
  });

  t.test('invite refusals', async (t) => {
    t.same(errorOf(await invite(ws, { email: 'owner1@example.com', roleId: roles.member.id })), [
      422,
      'member_is_owner',
      'email',
    ]);
    t.same(errorOf(await invite(ws, { email: 'ann@example.org', roleId: roles.member.id })), [
      422,
      'member_is_owner',
      'email',
    ]);
    await ok(invite(ws, { email: 'carl@example.org', roleId: roles.member.id }), 201);
    t.same(errorOf(await invite(ws, { email: 'CARL@example.org', roleId: roles.member.id })), [
      409,
      'invitation_too_soon',
      'email',
    ]);
    t.same(errorOf(await invite(ws, { email: 'x@example.org', roleId: `role_${'0'.repeat(24)}` })), [
      404,
      'role_not_found',
      'roleId',
    ]);
    t.same(errorOf(await invite(ws, { email: 'x@example.org', roleId: roles.owner.id })), [
      422,
      'invalid_parameter',
      'roleId',
    ]);
    t.same(
      errorOf(
        await invite(ws, { email: 'x@example.org', roleId: roles.member.id, addressIds: [`addr_${'0'.repeat(24)}`] }),
      ),
      [404, 'address_not_found', 'addressIds.0'],
    );
    t.same(
      errorOf(await invite(ws, { email: 'x@example.org', roleId: roles.member.id, domainIds: [domainId, 'nope'] })),
      [404, 'resource_not_found', 'domainIds.1'],
    );
    t.same(errorOf(await invite(ws, { email: 'not an address', roleId: roles.member.id })), [
      422,
      'invalid_parameter',
      'email',
    ]);
    t.same(errorOf(await invite(ws, { email: 'x@example.org', roleId: roles.member.id, access: 'admin' })), [
      422,
      'invalid_parameter',
      'access',
    ]);
    t.same(errorOf(await invite(ws, { email: 'x@example.org', roleId: roles.member.id, extra: 1 })), [
      422,
      'unknown_parameter',
      'extra',
    ]);
  });

  t.test('update, grants, remove; the owner refused, strangers and foreign ids 404', async (t) => {
    const userId = await join(ws, 'dora@example.org', roles.viewer.id);
    const patched = await ok(h.request(ws.apiKey, 'PATCH', `/members/${userId}`, { roleId: roles.member.id }));
    t.match(patched, { role: { id: roles.member.id }, permissions: roles.member.permissions });
    const granted = await ok(
      h.request(ws.apiKey, 'PUT', `/members/${userId}/addresses/${address.id}`, { access: 'member' }),
    );
    t.match(granted.addresses, [{ addressId: address.id, access: 'member' }]);
    const withDomain = await ok(
      h.request(ws.apiKey, 'PUT', `/members/${userId}/domains/${domainId}`, { access: 'viewer' }),
    );
    t.match(withDomain.domains, [{ domainId, access: 'viewer' }]);
    t.same((await ok(h.request(ws.apiKey, 'DELETE', `/members/${userId}/addresses/${address.id}`))).addresses, []);
    t.same((await ok(h.request(ws.apiKey, 'DELETE', `/members/${userId}/domains/${domainId}`))).domains, []);
    t.same(
      errorOf(
        await h.request(ws.apiKey, 'PUT', `/members/${userId}/addresses/addr_${'1'.repeat(24)}`, { access: 'member' }),
      ),
      [404, 'address_not_found', 'addressId'],
    );

    const owner = ws.ownerUserId;
    for (const [method, path, body] of [
      ['PATCH', `/members/${owner}`, { roleId: roles.member.id }],
      ['DELETE', `/members/${owner}`, undefined],
      ['PUT', `/members/${owner}/addresses/${address.id}`, { access: 'member' }],
      ['DELETE', `/members/${owner}/domains/${domainId}`, undefined],
    ] as const)
      t.same(
        errorOf(await h.request(ws.apiKey, method, path, body)),
        [422, 'member_is_owner', 'userId'],
        `${method} ${path}`,
      );

    for (const id of [foreign.ownerUserId, `usr_${'0'.repeat(24)}`]) {
      t.same(errorOf(await h.request(ws.apiKey, 'GET', `/members/${id}`)), [404, 'resource_not_found', 'userId']);
      t.same(errorOf(await h.request(ws.apiKey, 'PATCH', `/members/${id}`, { roleId: roles.member.id })), [
        404,
        'resource_not_found',
        'userId',
      ]);
      t.same(errorOf(await h.request(ws.apiKey, 'DELETE', `/members/${id}`)), [404, 'resource_not_found', 'userId']);
    }
    t.same(errorOf(await h.request(foreign.apiKey, 'GET', `/members/${userId}`)), [
      404,
      'resource_not_found',
      'userId',
    ]);

    t.same(await ok(h.request(ws.apiKey, 'DELETE', `/members/${userId}`)), { object: 'member', userId, deleted: true });
    t.same(errorOf(await h.request(ws.apiKey, 'GET', `/members/${userId}`)), [404, 'resource_not_found', 'userId']);
  });

  t.test('deleting a role moves its pending invitations', async (t) => {
    const custom = await ok(
      h.request(ws.apiKey, 'POST', '/roles', { name: 'Temps', permissions: ['emails:read'] }),
      201,
    );
    await ok(invite(ws, { email: 'eve@example.org', roleId: custom.id }), 201);
    t.same(errorOf(await h.request(ws.apiKey, 'DELETE', `/roles/${custom.id}`)), [409, 'role_in_use', 'reassignTo']);
    await ok(h.request(ws.apiKey, 'DELETE', `/roles/${custom.id}?reassignTo=${roles.viewer.id}`));
    t.equal((await accept(await linkTo('eve@example.org'))).statusCode, 200);
    const list = await ok(h.request(ws.apiKey, 'GET', '/members?limit=100'));
    t.match(
      list.data.find((m: any) => m.email === 'eve@example.org'),
      { role: { id: roles.viewer.id } },
    );
  });

  t.test('paging across pages with members added between', async (t) => {
    const other = await h.workspace();
    const r = await rolesOf(other);
    for (const e of ['b@example.org', 'd@example.org', 'f@example.org']) await join(other, e, r.viewer.id);
    const first = await ok(h.request(other.apiKey, 'GET', '/members?limit=2'));
    t.equal(first.hasMore, true);
    await join(other, 'a@example.org', r.viewer.id);
    await join(other, 'e@example.org', r.viewer.id);
    const second = await ok(h.request(other.apiKey, 'GET', `/members?limit=2&cursor=${first.nextCursor}`));
    const third = await ok(h.request(other.apiKey, 'GET', `/members?limit=2&cursor=${second.nextCursor}`));
    const seen = [...first.data, ...second.data, ...third.data];
    t.match(seen[0], { userId: other.ownerUserId, isOwner: true, email: /^owner\d+@example\.com$/ }, 'the owner first');
    t.same(
      seen.map((m: any) => (m.isOwner ? `owner:${m.userId}` : m.email)),
      [`owner:${other.ownerUserId}`, 'b@example.org', 'd@example.org', 'e@example.org', 'f@example.org'],
    );
    t.equal(third.hasMore, false);
    t.same(errorOf(await h.request(ws.apiKey, 'GET', `/members?cursor=${first.nextCursor}`)), [
      400,
      'invalid_cursor',
      'cursor',
    ]);
  });

  t.test('100 pending invitations, the 101st refused', async (t) => {
    const full = await h.workspace();
    const r = await rolesOf(full);
    for (let i = 0; i < PENDING_INVITATION_LIMIT; i += 10)
      await Promise.all(
        Array.from({ length: 10 }, (_, j) =>
          ok(invite(full, { email: `p${i + j}@example.org`, roleId: r.viewer.id }), 201),
        ),
      );
    t.same(errorOf(await invite(full, { email: 'one-more@example.org', roleId: r.viewer.id })), [
      422,
      'workspace_limit_reached',
      null,
    ]);
  });

  t.test('role changes refused: unknown, foreign, malformed and owner roles; the member keeps its role', async (t) => {
    const userId = await join(ws, 'fay@example.org', roles.viewer.id);
    const before = await ok(h.request(ws.apiKey, 'GET', `/members/${userId}`));
    const theirs = (await rolesOf(foreign)).member.id;
    for (const roleId of [`role_${'0'.repeat(24)}`, theirs, 'nope', ''])
      t.same(
        errorOf(await h.request(ws.apiKey, 'PATCH', `/members/${userId}`, { roleId })),
        [404, 'role_not_found', 'roleId'],
        JSON.stringify(roleId),
      );
    t.same(errorOf(await h.request(ws.apiKey, 'PATCH', `/members/${userId}`, { roleId: roles.owner.id })), [
      422,
      'invalid_parameter',
      'roleId',
    ]);
    t.same(errorOf(await h.request(ws.apiKey, 'PATCH', `/members/${userId}`, {})), [
      422,
      'invalid_parameter',
      'roleId',
    ]);
    t.same(errorOf(await h.request(ws.apiKey, 'PATCH', `/members/${userId}`, { roleId: 7 })), [
      422,
      'invalid_parameter',
      'roleId',
    ]);
    // The owner is answered before the role is looked at.
    t.same(errorOf(await h.request(ws.apiKey, 'PATCH', `/members/${ws.ownerUserId}`, { roleId: 'nope' })), [
      422,
      'member_is_owner',
      'userId',
    ]);
    t.same(await ok(h.request(ws.apiKey, 'GET', `/members/${userId}`)), before, 'the member is as it was');
  });

  t.test("grants naming another workspace's address or domain are 404; revoking one changes nothing", async (t) => {
    await addDomain(
      h.system.commands,
      h.system.domains,
      { workspaceId: foreign.workspaceId, kind: 'operator', id: null },
      { domain: 'members-foreign.example.net' },
      new Date().toISOString(),
    );
    const theirAddress = await ok(
      h.request(foreign.apiKey, 'POST', '/addresses', { address: 'desk@members-foreign.example.net' }),
      201,
    );
    const theirDomain = (await ok(h.request(foreign.apiKey, 'GET', '/domains'))).data[0].id as string;
    const userId = await join(ws, 'gus@example.org', roles.member.id);
    await ok(h.request(ws.apiKey, 'PUT', `/members/${userId}/addresses/${address.id}`, { access: 'viewer' }));
    await ok(h.request(ws.apiKey, 'PUT', `/members/${userId}/domains/${domainId}`, { access: 'member' }));
    const before = await ok(h.request(ws.apiKey, 'GET', `/members/${userId}`));

    t.same(
      errorOf(
        await h.request(ws.apiKey, 'PUT', `/members/${userId}/addresses/${theirAddress.id}`, { access: 'member' }),
      ),
      [404, 'address_not_found', 'addressId'],
    );
    for (const id of [theirDomain, '00000000-0000-4000-8000-000000000000', 'nope'])
      t.same(
        errorOf(await h.request(ws.apiKey, 'PUT', `/members/${userId}/domains/${id}`, { access: 'member' })),
        [404, 'resource_not_found', 'domainId'],
        id,
      );
    t.same(
      errorOf(
        await invite(ws, {
          email: 'hal@example.org',
          roleId: roles.member.id,
          addressIds: [address.id, theirAddress.id],
        }),
      ),
      [404, 'address_not_found', 'addressIds.1'],
    );
    t.same(errorOf(await invite(ws, { email: 'hal@example.org', roleId: roles.member.id, domainIds: [theirDomain] })), [
      404,
      'resource_not_found',
      'domainIds.0',
    ]);
    // A grant may outlive its address, so revoking checks no target: a foreign id is one the member does not hold.
    t.same(await ok(h.request(ws.apiKey, 'DELETE', `/members/${userId}/addresses/${theirAddress.id}`)), before);
    t.same(await ok(h.request(ws.apiKey, 'DELETE', `/members/${userId}/domains/${theirDomain}`)), before);
    t.same(await ok(h.request(ws.apiKey, 'GET', `/members/${userId}`)), before, 'the member is as it was');
    t.same(
      (await ok(h.request(foreign.apiKey, 'GET', '/members'))).data.map((m: any) => m.userId),
      [foreign.ownerUserId],
      'and nobody joined the other workspace',
    );
  });

  t.test('insufficient_authority: a key gives no role that holds a permission it lacks', async (t) => {
    const userId = await join(ws, 'ida@example.org', roles.viewer.id);
    const before = await ok(h.request(ws.apiKey, 'GET', `/members/${userId}`));
    const keyWith = async (scopes: string[]) =>
      (await ok(h.request(ws.apiKey, 'POST', '/keys', { name: 'members', scopes }), 201)).token as string;
    // The billing role's scope-able permissions; its console-only ones no key holds are not asked.
    const billingScopes = ['members:read', 'members:write', 'account:read', 'account:write', 'settings:read'];
    const narrow = await keyWith(billingScopes.filter((s) => s !== 'settings:read'));
    const wide = await keyWith(billingScopes);

    t.same(errorOf(await h.request(narrow, 'POST', '/members', { email: 'jo@example.org', roleId: roles.admin.id })), [
      403,
      'insufficient_authority',
      'roleId',
    ]);
    t.same(
      errorOf(await h.request(narrow, 'POST', '/members', { email: 'jo@example.org', roleId: roles.billing.id })),
      [403, 'insufficient_authority', 'roleId'],
      'one permission short',
    );
    t.same(errorOf(await h.request(narrow, 'PATCH', `/members/${userId}`, { roleId: roles.admin.id })), [
      403,
      'insufficient_authority',
      'roleId',
    ]);
    t.same(await ok(h.request(ws.apiKey, 'GET', `/members/${userId}`)), before, 'the member keeps its role');

    const invited = await h.request(wide, 'POST', '/members', { email: 'jo@example.org', roleId: roles.billing.id });
    t.equal(invited.statusCode, 201, 'a key holding every scope-able permission of the role invites with it');
    t.match(invited.json(), { object: 'invitation', email: 'jo@example.org', roleId: roles.billing.id });
    const changed = await ok(h.request(wide, 'PATCH', `/members/${userId}`, { roleId: roles.billing.id }));
    t.match(changed, { role: { id: roles.billing.id } });
    t.same(errorOf(await h.request(wide, 'PATCH', `/members/${userId}`, { roleId: roles.viewer.id })), [
      403,
      'insufficient_authority',
      'roleId',
    ]);
  });
});
