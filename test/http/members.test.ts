import t from 'tap';
import { addDomain } from '../../commands/domains/handlers.ts';
import { inviteMember } from '../../commands/members/handlers.ts';
import { INVITATION_SPACING_MS, PENDING_INVITATION_LIMIT } from '../../domain/members/decide.ts';
import { PERMISSIONS, type Permission } from '../../domain/shared/permissions.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { eventually } from '../support/receiver.ts';
import { type Mail, startSmtpServer } from '../support/smtp.ts';
import { startTcpProxy } from '../support/tcp-proxy.ts';

const PUBLIC = 'https://mail.example.net';
type Workspace = Awaited<ReturnType<TestApp['workspace']>>;
type Reply = Awaited<ReturnType<TestApp['request']>>;
const errorOf = (res: Reply) => [res.statusCode, res.json().error?.code, res.json().error?.param];
const form = { 'content-type': 'application/x-www-form-urlencoded' };
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** The acceptance links of the mails to `to`, oldest first. */
const linksIn = (mails: Mail[], to: string) =>
  mails
    .filter((m) => m.to.includes(to))
    .map((m) => new RegExp(`${PUBLIC}(/invitations/\\S+)`).exec(m.text)?.[1])
    .filter((l): l is string => l !== undefined);

t.test('members over HTTP', async (t) => {
  const smtp = await startSmtpServer(t);
  const h = await startTestApp(t, {
    smtpUrl: smtp.url,
    forwardConsent: { publicUrl: PUBLIC },
    invitationMails: { pollMs: 20 },
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
      const links = linksIn(smtp.mails, to);
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

  t.test('the mail: sent after the answer, once, in the words and with the link it always had', async (t) => {
    const sent = await ok(invite(ws, { email: 'Liv@Example.org', roleId: roles.viewer.id }), 201);
    const link = await linkTo('liv@example.org');
    await pause(300);
    const mails = smtp.mails.filter((m) => m.to.includes('liv@example.org'));
    t.equal(mails.length, 1, 'one mail');
    t.same(mails[0]!.to, ['liv@example.org']);
    t.equal(mails[0]!.subject, 'You are invited to Workspace 1');
    t.equal(
      mails[0]!.text.trim(),
      'You are invited to join the workspace Workspace 1 on the Workspace Mail Service.\n\n' +
        `To accept, open:\n\n${PUBLIC}${link}\n\n` +
        'The link works for 7 days. If you did not expect this, ignore this mail: nothing happens unless you accept.',
    );
    t.match(link, new RegExp(`^/invitations/${sent.id}\\.`), 'the link names the invitation');
    const page = await h.app.inject({ method: 'GET', url: link });
    t.equal(page.statusCode, 200);
    t.match(page.body, /liv@example\.org/);
  });

  t.test('a refresh after ten minutes mails a new link; one made before the last mail went replaces it', async (t) => {
    const inviteAt = (at: number) =>
      inviteMember(
        h.system.commands,
        { workspaceId: ws.workspaceId, kind: 'operator', id: null },
        { scopes: PERMISSIONS },
        {
          email: 'kim@example.org',
          role: { roleId: roles.viewer.id, builtin: 'viewer', permissions: roles.viewer.permissions as Permission[] },
          addressIds: [],
          domainIds: [],
          access: 'member',
          owner: { userId: ws.ownerUserId, email: 'owner1@example.com' },
        },
        new Date(at).toISOString(),
      );
    const spacing = INVITATION_SPACING_MS + 30_000;
    const first = await inviteAt(Date.now() - 2 * spacing);
    const old = await linkTo('kim@example.org');
    t.match(old, new RegExp(`^/invitations/${first.invitationId}\\.`));

    // The refresh's mail is refused, and before it is tried again the address is invited again.
    smtp.accept = () => false;
    const offered = smtp.offered();
    const second = await inviteAt(Date.now() - spacing);
    t.equal(second.invitationId, first.invitationId, 'a refresh keeps the invitation id');
    await eventually(async () => smtp.offered() > offered);
    const third = await ok(
      h.request(ws.apiKey, 'POST', '/members', { email: 'kim@example.org', roleId: roles.viewer.id }),
      201,
    );
    t.equal(third.id, first.invitationId);
    smtp.accept = () => true;
    const fresh = await linkTo('kim@example.org', 2);
    await pause(300);
    t.equal(linksIn(smtp.mails, 'kim@example.org').length, 2, 'the replaced mail never went');
    const { rows } = await h.system.database.pool.query(
      'SELECT sent_at IS NOT NULL AS sent FROM invitation_mails WHERE invitation_id = $1 ORDER BY position',
      [first.invitationId],
    );
    t.same(rows, [{ sent: true }, { sent: true }], 'and is owed no more');
    t.not(fresh, old);
    t.equal((await h.app.inject({ method: 'GET', url: old })).statusCode, 404, 'the first link stopped working');
    t.equal((await accept(fresh)).statusCode, 200, 'the newest works');
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
      ['DELETE', `/members/${owner}/addresses/${address.id}`, undefined],
      ['PUT', `/members/${owner}/domains/${domainId}`, { access: 'member' }],
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
      for (const [method, path, body] of [
        ['PUT', `/members/${id}/addresses/${address.id}`, { access: 'member' }],
        ['DELETE', `/members/${id}/addresses/${address.id}`, undefined],
        ['PUT', `/members/${id}/domains/${domainId}`, { access: 'member' }],
        ['DELETE', `/members/${id}/domains/${domainId}`, undefined],
      ] as const)
        t.same(
          errorOf(await h.request(ws.apiKey, method, path, body)),
          [404, 'resource_not_found', 'userId'],
          `${method} ${path}`,
        );
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
    // The owner and strangers are answered before the role is looked at.
    t.same(errorOf(await h.request(ws.apiKey, 'PATCH', `/members/${ws.ownerUserId}`, { roleId: 'nope' })), [
      422,
      'member_is_owner',
      'userId',
    ]);
    t.same(errorOf(await h.request(ws.apiKey, 'PATCH', `/members/usr_${'0'.repeat(24)}`, { roleId: 'nope' })), [
      404,
      'resource_not_found',
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

t.test('the mail server away: the invitation is answered at once and mailed when it is back', async (t) => {
  const smtp = await startSmtpServer(t);
  const proxy = await startTcpProxy('127.0.0.1', Number(new URL(smtp.url).port));
  t.teardown(() => proxy.close());
  await proxy.cut();
  const h = await startTestApp(t, {
    smtpUrl: `smtp://127.0.0.1:${proxy.port}`,
    forwardConsent: { publicUrl: PUBLIC },
    invitationMails: { pollMs: 20, retryMs: [100] },
    readModelDeadlineMs: 60_000,
  });
  const ws = await h.workspace();
  const viewer = (await h.request(ws.apiKey, 'GET', '/roles')).json().data.find((r: any) => r.builtin === 'viewer');
  const invited = await h.request(ws.apiKey, 'POST', '/members', { email: 'nia@example.org', roleId: viewer.id });
  t.equal(invited.statusCode, 201, 'the invitation does not wait for the mail');
  t.match(invited.json(), { object: 'invitation', email: 'nia@example.org' });
  const tries = await eventually(async () => {
    const { rows } = await h.system.database.pool.query(
      'SELECT attempts, last_error, sent_at FROM invitation_mails WHERE invitation_id = $1',
      [invited.json().id],
    );
    return rows[0]?.attempts >= 2 && rows[0];
  });
  t.match(tries, { last_error: /ECONNREFUSED|connect/i, sent_at: null }, 'tried, failed, owed still');
  t.equal(smtp.mails.length, 0);

  await proxy.restore();
  const link = await eventually(async () => linksIn(smtp.mails, 'nia@example.org')[0]);
  t.equal((await h.app.inject({ method: 'POST', url: link, payload: '', headers: form })).statusCode, 200);
  await pause(300);
  t.equal(smtp.mails.length, 1, 'mailed once');
  const members = (await h.request(ws.apiKey, 'GET', '/members')).json().data;
  t.same(
    members.map((m: any) => m.email),
    ['owner1@example.com', 'nia@example.org'],
  );
});

t.test('a mail server answering 451 to the first offer: the invitation is mailed on the next try, once', async (t) => {
  const smtp = await startSmtpServer(t, (n) => n > 1);
  const h = await startTestApp(t, {
    smtpUrl: smtp.url,
    forwardConsent: { publicUrl: PUBLIC },
    invitationMails: { pollMs: 20, retryMs: [200] },
    readModelDeadlineMs: 60_000,
  });
  const ws = await h.workspace();
  const viewer = (await h.request(ws.apiKey, 'GET', '/roles')).json().data.find((r: any) => r.builtin === 'viewer');
  const invited = await h.request(ws.apiKey, 'POST', '/members', { email: 'oz@example.org', roleId: viewer.id });
  t.equal(invited.statusCode, 201);
  const mail = await eventually(async () => smtp.mails[0]);
  t.same(mail.to, ['oz@example.org']);
  t.match(mail.text, new RegExp(`${PUBLIC}/invitations/${invited.json().id}\\.`));
  await pause(500);
  t.equal(smtp.offered(), 2, 'refused once, then taken');
  t.equal(smtp.mails.length, 1, 'mailed once');
  const { rows } = await h.system.database.pool.query(
    'SELECT attempts, last_error, sent_at FROM invitation_mails WHERE invitation_id = $1',
    [invited.json().id],
  );
  t.match(rows, [{ attempts: 2, last_error: /451/, sent_at: Date }]);
});
