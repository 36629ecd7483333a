import t from 'tap';
import { CONSOLE_ONLY, PERMISSIONS } from '../../domain/shared/permissions.ts';
import { startTestApp, type TestApp } from '../support/app.ts';

const LADDER = ['owner', 'admin', 'member', 'viewer', 'developer', 'billing'];
const UNKNOWN_ROLE = `role_${'0'.repeat(24)}`;

type Tap = Pick<typeof t, 'equal' | 'match'>;
type Reply = Awaited<ReturnType<TestApp['request']>>;

interface Role {
  id: string;
  name: string;
  builtin: string | null;
  permissions: string[];
  [field: string]: unknown;
}

t.test('roles over HTTP', async (t) => {
  const h = await startTestApp(t);

  const roles = async (key: string): Promise<Role[]> => {
    const res = await h.request(key, 'GET', '/roles?limit=100');
    if (res.statusCode !== 200) throw new Error(`list roles: ${res.statusCode} ${res.body}`);
    return res.json().data;
  };
  const seeded = async (key: string) =>
    Object.fromEntries((await roles(key)).filter((r) => r.builtin).map((r) => [r.builtin, r])) as Record<string, Role>;
  const createRole = async (key: string, body: Record<string, unknown>): Promise<Role> => {
    const res = await h.request(key, 'POST', '/roles', body);
    if (res.statusCode !== 201) throw new Error(`create role: ${res.statusCode} ${res.body}`);
    return res.json();
  };
  const createKey = async (key: string, body: Record<string, unknown>): Promise<{ id: string; token: string }> => {
    const res = await h.request(key, 'POST', '/keys', body);
    if (res.statusCode !== 201) throw new Error(`create key: ${res.statusCode} ${res.body}`);
    return res.json();
  };
  const expectError = (t: Tap, res: Reply, status: number, code: string, param?: string) => {
    t.equal(res.statusCode, status, `${code}: status`);
    t.match(res.json().error, { code, ...(param === undefined ? {} : { param }) }, code);
  };

  t.test('the first list read seeds the six roles once; deleted seeded roles stay deleted', async (t) => {
    const ws = await h.workspace();
    const first = await Promise.all(Array.from({ length: 4 }, () => h.request(ws.apiKey, 'GET', '/roles')));
    for (const res of first)
      t.same(
        res.json().data.map((r: Role) => r.builtin),
        LADDER,
        'concurrent first reads all see the seeded roles',
      );
    const ids = first[0]!.json().data.map((r: Role) => r.id);
    for (const res of first)
      t.same(
        res.json().data.map((r: Role) => r.id),
        ids,
        'seeded once',
      );
    const [owner, admin, , viewer] = first[0]!.json().data as Role[];
    t.match(owner, { object: 'role', name: 'Owner', editable: false, deletable: false, members: 1, apiKeys: 0 });
    t.match(owner!.id, /^role_[0-9a-f]{24}$/);
    t.same(owner!.permissions, PERMISSIONS);
    t.match(admin, { editable: true, deletable: true, members: 0 });
    t.notOk(admin!.permissions.includes('billing:read'));

    const gone = await h.request(ws.apiKey, 'DELETE', `/roles/${viewer!.id}`);
    t.same(gone.json(), { object: 'role', id: viewer!.id, deleted: true, reassigned: 0, keysReassigned: 0 });
    t.same(
      (await roles(ws.apiKey)).map((r) => r.builtin),
      ['owner', 'admin', 'member', 'developer', 'billing'],
    );
    t.same(
      (await roles(ws.apiKey)).map((r) => r.id),
      ids.filter((id: string) => id !== viewer!.id),
      'still deleted on the next read',
    );
  });

  t.test('the permission vocabulary', async (t) => {
    const ws = await h.workspace();
    const res = await h.request(ws.apiKey, 'GET', '/roles/permissions');
    t.equal(res.statusCode, 200);
    const entries = res.json();
    t.same(
      entries.map((e: { permission: string }) => e.permission),
      PERMISSIONS,
    );
    t.same(
      entries
        .filter((e: { scope: boolean }) => !e.scope)
        .map((e: { permission: string }) => e.permission)
        .sort(),
      [...CONSOLE_ONLY].sort(),
    );
    t.match(entries[0], { permission: 'emails:send', label: String, group: String, scope: true });
  });

  t.test('create, read, update, delete, each seen by the next read', async (t) => {
    const ws = await h.workspace();
    const created = await h.request(ws.apiKey, 'POST', '/roles', {
      name: '  Support ',
      description: 'Answers',
      permissions: ['templates:write', 'emails:read'],
    });
    t.equal(created.statusCode, 201);
    const role = created.json();
    t.match(role, {
      object: 'role',
      name: 'Support',
      description: 'Answers',
      permissions: ['emails:read', 'templates:read', 'templates:write'],
      builtin: null,
      editable: true,
      deletable: true,
      members: 0,
      apiKeys: 0,
    });
    t.match(role.id, /^role_[0-9a-f]{24}$/);
    t.same((await h.request(ws.apiKey, 'GET', `/roles/${role.id}`)).json(), role);
    t.same(
      (await roles(ws.apiKey)).map((r) => r.name),
      ['Owner', 'Admin', 'Member', 'Viewer', 'Developer', 'Billing', 'Support'],
      'creating seeded first',
    );

    const patched = await h.request(ws.apiKey, 'PATCH', `/roles/${role.id}`, {
      description: null,
      permissions: ['roles:write'],
    });
    t.equal(patched.statusCode, 200);
    t.match(patched.json(), {
      name: 'Support',
      description: null,
      permissions: ['members:read', 'roles:read', 'roles:write'],
    });
    t.same((await h.request(ws.apiKey, 'GET', `/roles/${role.id}`)).json(), patched.json());
    t.equal(
      (await h.request(ws.apiKey, 'PATCH', `/roles/${role.id}`, { description: '  ' })).json().description,
      null,
      'blank stored as null',
    );
    t.equal(
      (await h.request(ws.apiKey, 'PATCH', `/roles/${role.id}`, { name: 'SUPPORT' })).json().name,
      'SUPPORT',
      'own name in another case',
    );

    const deleted = await h.request(ws.apiKey, 'DELETE', `/roles/${role.id}`);
    t.same(deleted.json(), { object: 'role', id: role.id, deleted: true, reassigned: 0, keysReassigned: 0 });
    expectError(t, await h.request(ws.apiKey, 'GET', `/roles/${role.id}`), 404, 'role_not_found', 'roleId');
    expectError(t, await h.request(ws.apiKey, 'DELETE', `/roles/${role.id}`), 404, 'role_not_found', 'roleId');
    expectError(
      t,
      await h.request(ws.apiKey, 'PATCH', `/roles/${role.id}`, { name: 'x' }),
      404,
      'role_not_found',
      'roleId',
    );
  });

  t.test('validation: names, descriptions, permissions, unknown fields', async (t) => {
    const ws = await h.workspace();
    const post = (body: Record<string, unknown>) => h.request(ws.apiKey, 'POST', '/roles', body);
    t.equal(
      (await post({ name: 'n'.repeat(48), permissions: [] })).statusCode,
      201,
      '48 characters and no permissions',
    );
    expectError(t, await post({ name: 'm'.repeat(49), permissions: [] }), 422, 'invalid_parameter', 'name');
    expectError(t, await post({ name: '   ', permissions: [] }), 422, 'invalid_parameter', 'name');
    t.equal(
      (await post({ name: 'Long', description: 'd'.repeat(240), permissions: [] })).statusCode,
      201,
      '240 characters',
    );
    expectError(
      t,
      await post({ name: 'Longer', description: 'd'.repeat(241), permissions: [] }),
      422,
      'invalid_parameter',
      'description',
    );
    expectError(
      t,
      await post({ name: 'Bad', permissions: ['emails:send', 'emails:fly'] }),
      422,
      'invalid_parameter',
      'permissions.1',
    );
    expectError(t, await post({ name: 'Bad' }), 422, 'invalid_parameter', 'permissions');
    expectError(t, await post({ name: 'Bad', permissions: [], colour: 'red' }), 422, 'unknown_parameter', 'colour');
    t.equal(
      (await post({ name: 'Fifty-three', permissions: Array(53).fill('emails:send') })).statusCode,
      201,
      'permissions: 53 entries',
    );
    expectError(
      t,
      await post({ name: 'Fifty-four', permissions: Array(54).fill('emails:send') }),
      422,
      'invalid_parameter',
      'permissions',
    );
    t.equal(
      (await roles(ws.apiKey)).some((r) => r.name === 'Bad'),
      false,
      'refused, not created',
    );

    const support = await createRole(ws.apiKey, { name: 'Support', permissions: [] });
    expectError(t, await post({ name: 'sUPPORT', permissions: [] }), 409, 'role_name_taken', 'name');
    expectError(t, await post({ name: 'ADMIN', permissions: [] }), 409, 'role_name_taken', 'name');
    expectError(
      t,
      await h.request(ws.apiKey, 'PATCH', `/roles/${support.id}`, { name: 'viewer' }),
      409,
      'role_name_taken',
      'name',
    );
    expectError(
      t,
      await h.request(ws.apiKey, 'PATCH', `/roles/${support.id}`, { name: ' ' }),
      422,
      'invalid_parameter',
      'name',
    );
    expectError(
      t,
      await h.request(ws.apiKey, 'PATCH', `/roles/${support.id}`, { builtin: 'owner' }),
      422,
      'unknown_parameter',
      'builtin',
    );
    expectError(
      t,
      await h.request(ws.apiKey, 'PATCH', `/roles/${support.id}`, { permissions: ['nope'] }),
      422,
      'invalid_parameter',
      'permissions.0',
    );
    expectError(t, await h.request(ws.apiKey, 'GET', '/roles?sort=name'), 422, 'unknown_parameter', 'sort');
    expectError(
      t,
      await h.request(ws.apiKey, 'DELETE', `/roles/${support.id}?force=true`),
      422,
      'unknown_parameter',
      'force',
    );
  });

  t.test('the owner role is immutable and undeletable', async (t) => {
    const ws = await h.workspace();
    const { owner } = await seeded(ws.apiKey);
    expectError(t, await h.request(ws.apiKey, 'PATCH', `/roles/${owner!.id}`, { name: 'Boss' }), 409, 'role_immutable');
    expectError(t, await h.request(ws.apiKey, 'DELETE', `/roles/${owner!.id}`), 409, 'role_undeletable');
    t.equal((await h.request(ws.apiKey, 'GET', `/roles/${owner!.id}`)).json().name, 'Owner');
  });

  t.test('nobody grants a permission it does not hold', async (t) => {
    const ws = await h.workspace();
    expectError(
      t,
      await h.request(ws.apiKey, 'POST', '/roles', { name: 'Money', permissions: ['emails:read', 'billing:read'] }),
      403,
      'insufficient_authority',
      'permissions.1',
    );
    const manager = await createKey(ws.apiKey, {
      scopes: ['roles:read', 'roles:write', 'members:read', 'emails:read'],
    });
    expectError(
      t,
      await h.request(manager.token, 'POST', '/roles', {
        name: 'Senders',
        permissions: ['emails:read', 'emails:send'],
      }),
      403,
      'insufficient_authority',
      'permissions.1',
    );
    const readers = await createRole(manager.token, { name: 'Readers', permissions: ['emails:read'] });
    expectError(
      t,
      await h.request(manager.token, 'PATCH', `/roles/${readers.id}`, {
        permissions: ['emails:read', 'contacts:read'],
      }),
      403,
      'insufficient_authority',
      'permissions.1',
    );
    const { admin } = await seeded(ws.apiKey);
    const renamed = await h.request(manager.token, 'PATCH', `/roles/${admin!.id}`, {
      name: 'Admins',
      permissions: admin!.permissions,
    });
    t.equal(renamed.statusCode, 200, 'keeping what the role holds is not granting it, console-only included');
    t.same(renamed.json().permissions, admin!.permissions);
  });

  t.test('scopes: roles:read to read, roles:write to change', async (t) => {
    const ws = await h.workspace();
    const { member } = await seeded(ws.apiKey);
    const mailer = await createKey(ws.apiKey, { scopes: ['emails:read'] });
    expectError(t, await h.request(mailer.token, 'GET', '/roles'), 403, 'insufficient_scope');
    expectError(t, await h.request(mailer.token, 'GET', '/roles/permissions'), 403, 'insufficient_scope');
    expectError(t, await h.request(mailer.token, 'GET', `/roles/${member!.id}`), 403, 'insufficient_scope');
    const reader = await createKey(ws.apiKey, { scopes: ['roles:read'] });
    t.equal((await h.request(reader.token, 'GET', '/roles')).statusCode, 200);
    expectError(
      t,
      await h.request(reader.token, 'POST', '/roles', { name: 'X', permissions: [] }),
      403,
      'insufficient_scope',
    );
    expectError(
      t,
      await h.request(reader.token, 'PATCH', `/roles/${member!.id}`, { name: 'X' }),
      403,
      'insufficient_scope',
    );
    expectError(t, await h.request(reader.token, 'DELETE', `/roles/${member!.id}`), 403, 'insufficient_scope');
  });

  t.test('deleting a held role: role_in_use, then reassigned with its keys', async (t) => {
    const ws = await h.workspace();
    const { viewer } = await seeded(ws.apiKey);
    const support = await createRole(ws.apiKey, {
      name: 'Support',
      permissions: ['emails:read', 'emails:send', 'roles:read'],
    });
    const key = await createKey(ws.apiKey, {
      scopes: ['emails:read', 'emails:send', 'roles:read'],
      roleId: support.id,
    });
    t.equal((await h.request(ws.apiKey, 'GET', `/roles/${support.id}`)).json().apiKeys, 1);

    expectError(t, await h.request(ws.apiKey, 'DELETE', `/roles/${support.id}`), 409, 'role_in_use');
    expectError(
      t,
      await h.request(ws.apiKey, 'DELETE', `/roles/${support.id}?reassignTo=${support.id}`),
      422,
      'invalid_parameter',
      'reassignTo',
    );
    expectError(
      t,
      await h.request(ws.apiKey, 'DELETE', `/roles/${support.id}?reassignTo=${UNKNOWN_ROLE}`),
      404,
      'role_not_found',
      'reassignTo',
    );

    const deleted = await h.request(ws.apiKey, 'DELETE', `/roles/${support.id}?reassignTo=${viewer!.id}`);
    t.equal(deleted.statusCode, 200);
    t.same(deleted.json(), { object: 'role', id: support.id, deleted: true, reassigned: 0, keysReassigned: 1 });
    const ping = (await h.request(key.token, 'GET', '/ping')).json();
    t.equal(ping.roleId, viewer!.id, 'the key moved to the viewer role');
    t.same(ping.scopes, ['emails:read', 'roles:read'], 'and is bounded by it on the next request');
    t.same(ping.grantedScopes, ['emails:send', 'emails:read', 'roles:read']);
    t.equal((await h.request(ws.apiKey, 'GET', `/roles/${viewer!.id}`)).json().apiKeys, 1);
    expectError(
      t,
      await h.request(ws.apiKey, 'POST', '/keys', { scopes: ['emails:read'], roleId: support.id }),
      404,
      'role_not_found',
      'roleId',
    );
  });

  t.test('a key cannot escape its role by deleting it with reassignTo a wider role', async (t) => {
    const ws = await h.workspace();
    const { owner, admin, viewer } = await seeded(ws.apiKey);
    const writers = await createRole(ws.apiKey, { name: 'Role writers', permissions: ['roles:write'] });
    const readers = await createRole(ws.apiKey, { name: 'Role readers', permissions: ['roles:read'] });
    const all = (await h.request(ws.apiKey, 'GET', '/ping')).json().scopes;
    const key = await createKey(ws.apiKey, { scopes: all, roleId: writers.id });
    t.same(
      (await h.request(key.token, 'GET', '/ping')).json().scopes,
      ['members:read', 'roles:read', 'roles:write'],
      'the role is its ceiling',
    );

    for (const wider of [owner!, admin!, viewer!]) {
      expectError(
        t,
        await h.request(key.token, 'DELETE', `/roles/${writers.id}?reassignTo=${wider.id}`),
        403,
        'insufficient_authority',
        'reassignTo',
      );
    }
    t.equal((await h.request(ws.apiKey, 'GET', `/roles/${writers.id}`)).statusCode, 200, 'the role is still there');
    const after = (await h.request(key.token, 'GET', '/ping')).json();
    t.same(
      [after.roleId, after.scopes],
      [writers.id, ['members:read', 'roles:read', 'roles:write']],
      'and the key is as narrow as before',
    );

    const moved = await h.request(key.token, 'DELETE', `/roles/${writers.id}?reassignTo=${readers.id}`);
    t.same(
      moved.json(),
      { object: 'role', id: writers.id, deleted: true, reassigned: 0, keysReassigned: 1 },
      'to a role inside its authority it may move itself',
    );
    t.same((await h.request(key.token, 'GET', '/ping')).json().scopes, ['roles:read']);
  });

  t.test('narrowing a role takes effect on the next request of its keys', async (t) => {
    const ws = await h.workspace();
    const role = await createRole(ws.apiKey, { name: 'Auditors', permissions: ['roles:read', 'emails:read'] });
    const key = await createKey(ws.apiKey, { scopes: ['roles:read', 'emails:read'], roleId: role.id });
    t.equal((await h.request(key.token, 'GET', '/roles')).statusCode, 200);

    await h.request(ws.apiKey, 'PATCH', `/roles/${role.id}`, { permissions: ['emails:read'] });
    expectError(t, await h.request(key.token, 'GET', '/roles'), 403, 'insufficient_scope');
    const self = (await h.request(key.token, 'GET', '/keys/self')).json();
    t.ok(self.grantedScopes.includes('roles:read'));
    t.notOk(self.scopes.includes('roles:read'), 'removed by the role');

    await h.request(ws.apiKey, 'PATCH', `/roles/${role.id}`, { permissions: ['emails:read', 'roles:read'] });
    t.equal((await h.request(key.token, 'GET', '/roles')).statusCode, 200, 'widening takes effect too');
  });

  t.test("another workspace's role answers like a missing one", async (t) => {
    const mine = await h.workspace();
    const theirs = await h.workspace();
    const foreign = await createRole(theirs.apiKey, { name: 'Theirs', permissions: [] });
    expectError(t, await h.request(mine.apiKey, 'GET', `/roles/${foreign.id}`), 404, 'role_not_found', 'roleId');
    expectError(t, await h.request(mine.apiKey, 'GET', `/roles/${UNKNOWN_ROLE}`), 404, 'role_not_found', 'roleId');
    expectError(
      t,
      await h.request(mine.apiKey, 'PATCH', `/roles/${foreign.id}`, { name: 'Mine' }),
      404,
      'role_not_found',
      'roleId',
    );
    expectError(t, await h.request(mine.apiKey, 'DELETE', `/roles/${foreign.id}`), 404, 'role_not_found', 'roleId');
    const { member } = await seeded(mine.apiKey);
    const { viewer } = await seeded(theirs.apiKey);
    expectError(
      t,
      await h.request(mine.apiKey, 'DELETE', `/roles/${member!.id}?reassignTo=${viewer!.id}`),
      404,
      'role_not_found',
      'reassignTo',
    );
    expectError(
      t,
      await h.request(mine.apiKey, 'POST', '/keys', { scopes: ['emails:read'], roleId: foreign.id }),
      404,
      'role_not_found',
      'roleId',
    );
    t.equal((await h.request(theirs.apiKey, 'GET', `/roles/${foreign.id}`)).statusCode, 200, 'untouched');
  });

  t.test('at most 24 custom roles', async (t) => {
    const ws = await h.workspace();
    const made: Role[] = [];
    for (let i = 0; i < 24; i++) made.push(await createRole(ws.apiKey, { name: `Team ${i}`, permissions: [] }));
    expectError(
      t,
      await h.request(ws.apiKey, 'POST', '/roles', { name: 'Team 24', permissions: [] }),
      422,
      'workspace_limit_reached',
    );
    t.equal((await roles(ws.apiKey)).length, 30, 'seeded roles do not count');
    await h.request(ws.apiKey, 'DELETE', `/roles/${made[0]!.id}`);
    t.equal(
      (await h.request(ws.apiKey, 'POST', '/roles', { name: 'Team 24', permissions: [] })).statusCode,
      201,
      'a delete frees a place',
    );
  });

  t.test('concurrent creates of one name: exactly one 201', async (t) => {
    const ws = await h.workspace();
    const names = ['Race', 'race', 'RACE', 'rAce', 'Race ', ' race', 'RaCe', 'racE'];
    const answers = await Promise.all(
      names.map((name) => h.request(ws.apiKey, 'POST', '/roles', { name, permissions: [] })),
    );
    t.same(answers.map((a) => a.statusCode).sort(), [201, 409, 409, 409, 409, 409, 409, 409]);
    for (const a of answers.filter((a) => a.statusCode === 409)) t.equal(a.json().error.code, 'role_name_taken');
    const listed = await roles(ws.apiKey);
    t.same(
      listed.map((r) => r.builtin ?? r.name.toLowerCase()),
      [...LADDER, 'race'],
      'seeded once, one custom role',
    );
  });

  t.test('paging: a walk stays complete and ordered while roles are added', async (t) => {
    const ws = await h.workspace();
    for (const name of ['beta', 'Delta', 'foxtrot', 'Hotel']) await createRole(ws.apiKey, { name, permissions: [] });
    const walked: string[] = [];
    let cursor: string | null = null;
    const between: string[][] = [['alpha', 'Zulu'], ['Charlie'], ['aardvark', 'golf'], [], []];
    for (let page = 0; ; page++) {
      const res = await h.request(
        ws.apiKey,
        'GET',
        `/roles?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      t.equal(res.statusCode, 200);
      const body = res.json();
      walked.push(...body.data.map((r: Role) => r.builtin ?? r.name));
      t.equal(body.nextCursor === null, !body.hasMore);
      if (!body.hasMore) break;
      cursor = body.nextCursor;
      for (const name of between[page] ?? []) await createRole(ws.apiKey, { name, permissions: [] });
    }
    t.same(
      walked,
      [...LADDER, 'alpha', 'beta', 'Charlie', 'Delta', 'foxtrot', 'golf', 'Hotel', 'Zulu'],
      'aardvark was added behind the cursor',
    );
    t.same(
      (await roles(ws.apiKey)).filter((r) => !r.builtin).map((r) => r.name),
      ['aardvark', 'alpha', 'beta', 'Charlie', 'Delta', 'foxtrot', 'golf', 'Hotel', 'Zulu'],
    );

    expectError(t, await h.request(ws.apiKey, 'GET', '/roles?limit=0'), 422, 'invalid_parameter', 'limit');
    expectError(t, await h.request(ws.apiKey, 'GET', '/roles?limit=101'), 422, 'invalid_parameter', 'limit');
    expectError(t, await h.request(ws.apiKey, 'GET', '/roles?cursor=bogus'), 400, 'invalid_cursor', 'cursor');
    const other = await h.workspace();
    const theirCursor = (await h.request(other.apiKey, 'GET', '/roles?limit=1')).json().nextCursor;
    expectError(
      t,
      await h.request(ws.apiKey, 'GET', `/roles?cursor=${encodeURIComponent(theirCursor)}`),
      400,
      'invalid_cursor',
      'cursor',
    );
  });
});
