import t from 'tap';
import { refusal } from '../support/refusal.ts';
import {
  CUSTOM_ROLE_LIMIT,
  decideCreateRole,
  decideDeleteRole,
  decideSeedRoles,
  decideUpdateRole,
  type CreateRole,
  type DeleteRole,
  type SeedIds,
  type UpdateRole,
} from '../../domain/roles/decide.ts';
import type { RoleEvent } from '../../domain/roles/events.ts';
import { BUILTINS, seedRole } from '../../domain/roles/seeds.ts';
import { rolesAggregate, type RolesState } from '../../domain/roles/state.ts';
import { CONSOLE_ONLY, PERMISSIONS, SCOPEABLE, type Permission } from '../../domain/shared/permissions.ts';

const NOW = '2026-01-01T00:00:00.000Z';
const LATER = '2026-01-02T00:00:00.000Z';
const seedIds = (tag: string): SeedIds =>
  Object.fromEntries(BUILTINS.map((b, i) => [b, `role_${tag}${String(i).padStart(23, '0')}`])) as SeedIds;
const IDS = seedIds('a');
const OTHER_IDS = seedIds('b');
const ownerKey = { scopes: [...SCOPEABLE] };

const given = (events: RoleEvent[]): RolesState => events.reduce(rolesAggregate.evolve, rolesAggregate.initialState);
const seeded: RoleEvent = {
  type: 'RolesSeeded',
  data: { roles: BUILTINS.map((b) => seedRole(b, IDS[b])), seededAt: NOW },
};
const custom = (roleId: string, name: string, permissions: Permission[] = ['emails:read']): RoleEvent => ({
  type: 'RoleCreated',
  data: { roleId, name, description: null, permissions, createdAt: NOW },
});

const create = (o: Partial<CreateRole> = {}): CreateRole => ({
  roleId: 'role_new',
  name: 'Support',
  description: null,
  permissions: ['emails:read'],
  seedIds: OTHER_IDS,
  now: LATER,
  caller: ownerKey,
  ...o,
});
const update = (o: Partial<UpdateRole> = {}): UpdateRole => ({ roleId: 'role_c1', now: LATER, caller: ownerKey, ...o });
const remove = (o: Partial<DeleteRole> = {}): DeleteRole => ({
  roleId: 'role_c1',
  reassignTo: null,
  holders: { members: 0, keys: 0 },
  now: LATER,
  caller: ownerKey,
  ...o,
});

t.test('seeding: the six roles once, then only the owner role comes back', async (t) => {
  const [first] = decideSeedRoles(given([]), { seedIds: IDS, now: NOW });
  t.same(first, seeded);
  t.same(decideSeedRoles(given([seeded]), { seedIds: OTHER_IDS, now: LATER }), []);

  const noViewer = given([
    seeded,
    { type: 'RoleDeleted', data: { roleId: IDS.viewer, reassignTo: null, deletedAt: NOW } },
  ]);
  t.same(decideSeedRoles(noViewer, { seedIds: OTHER_IDS, now: LATER }), [], 'a deleted seeded role stays deleted');

  const noOwner = given([
    seeded,
    { type: 'RoleDeleted', data: { roleId: IDS.owner, reassignTo: null, deletedAt: NOW } },
  ]);
  t.same(decideSeedRoles(noOwner, { seedIds: OTHER_IDS, now: LATER }), [
    { type: 'OwnerRoleRestored', data: { role: seedRole('owner', OTHER_IDS.owner), restoredAt: LATER } },
  ]);
});

t.test('seeded permission sets are stored expanded and in canonical order', async (t) => {
  const [event] = decideSeedRoles(given([]), { seedIds: IDS, now: NOW });
  const roles = event!.type === 'RolesSeeded' ? event!.data.roles : [];
  const byBuiltin = Object.fromEntries(roles.map((r) => [r.builtin, r.permissions]));
  t.same(byBuiltin.owner, PERMISSIONS);
  t.same(
    byBuiltin.admin,
    PERMISSIONS.filter((p) => !['workspace:manage', 'billing:read', 'billing:write'].includes(p)),
  );
  t.ok(
    byBuiltin.viewer!.every((p) => p.endsWith(':read')),
    'viewer only reads',
  );
  t.ok(byBuiltin.developer!.includes('api-keys:write') && !byBuiltin.developer!.includes('billing:read'));
  t.same(byBuiltin.billing, [
    'members:read',
    'settings:read',
    'billing:read',
    'billing:write',
    'account:read',
    'account:write',
  ]);
  for (const r of roles)
    t.same(
      r.permissions,
      PERMISSIONS.filter((p) => r.permissions.includes(p)),
      `${r.builtin} in canonical order`,
    );
});

t.test('create: seeds first on an unseeded workspace, expands implications, trims', async (t) => {
  const events = decideCreateRole(
    given([]),
    create({ name: '  Support  ', description: '   ', permissions: ['roles:write', 'templates:write'] }),
  );
  t.equal(events.length, 2);
  t.equal(events[0]!.type, 'RolesSeeded');
  t.same(events[1], {
    type: 'RoleCreated',
    data: {
      roleId: 'role_new',
      name: 'Support',
      description: null,
      permissions: ['templates:read', 'templates:write', 'members:read', 'roles:read', 'roles:write'],
      createdAt: LATER,
    },
  });
  t.same(
    decideCreateRole(given([seeded]), create({ permissions: [] })).map((e) => e.type),
    ['RoleCreated'],
    'no second seeding; empty list allowed',
  );
});

t.test('create: name and description limits', async (t) => {
  const state = given([seeded]);
  t.equal(decideCreateRole(state, create({ name: 'x'.repeat(48) })).length, 1);
  t.equal(decideCreateRole(state, create({ name: '😀'.repeat(48) })).length, 1, 'characters, not UTF-16 units');
  t.match(
    refusal(() => decideCreateRole(state, create({ name: 'x'.repeat(49) }))),
    { code: 'invalid_parameter', param: 'name' },
  );
  t.match(
    refusal(() => decideCreateRole(state, create({ name: '  ' }))),
    { code: 'invalid_parameter', param: 'name' },
  );
  t.equal(decideCreateRole(state, create({ description: 'd'.repeat(240) })).length, 1);
  t.match(
    refusal(() => decideCreateRole(state, create({ description: 'd'.repeat(241) }))),
    { code: 'invalid_parameter', param: 'description' },
  );
});

t.test('create: names are unique ignoring case, seeded names included', async (t) => {
  const state = given([seeded, custom('role_c1', 'Support')]);
  t.match(
    refusal(() => decideCreateRole(state, create({ name: 'SUPPORT' }))),
    { code: 'role_name_taken', param: 'name' },
  );
  t.match(
    refusal(() => decideCreateRole(state, create({ name: 'admin' }))),
    { code: 'role_name_taken', param: 'name' },
  );
  t.match(
    refusal(() => decideCreateRole(given([]), create({ name: 'Viewer' }))),
    { code: 'role_name_taken' },
    'also when this create seeds',
  );
});

t.test('create: at most 24 custom roles; seeded roles do not count', async (t) => {
  const events = [
    seeded,
    ...Array.from({ length: CUSTOM_ROLE_LIMIT - 1 }, (_, i) => custom(`role_c${i}`, `Role ${i}`)),
  ];
  t.equal(decideCreateRole(given(events), create()).length, 1, 'the 24th');
  const full = given([...events, custom('role_last', 'Last')]);
  t.match(
    refusal(() => decideCreateRole(full, create())),
    { code: 'workspace_limit_reached' },
  );
  const freed = given([
    ...events,
    custom('role_last', 'Last'),
    { type: 'RoleDeleted', data: { roleId: 'role_last', reassignTo: null, deletedAt: NOW } },
  ]);
  t.equal(decideCreateRole(freed, create()).length, 1, 'a delete frees a place');
});

t.test('create: nobody grants what they do not hold', async (t) => {
  const state = given([seeded]);
  const narrow = { scopes: ['emails:read', 'roles:write', 'roles:read'] as Permission[] };
  t.match(
    refusal(() => decideCreateRole(state, create({ permissions: ['emails:read', 'emails:send'], caller: narrow }))),
    {
      code: 'insufficient_authority',
      param: 'permissions.1',
    },
  );
  t.match(
    refusal(() => decideCreateRole(state, create({ permissions: ['roles:write'], caller: narrow }))),
    {
      code: 'insufficient_authority',
      param: 'permissions.0',
    },
    'an implied permission (members:read) counts against the entry bringing it',
  );
  for (const p of CONSOLE_ONLY) {
    t.match(
      refusal(() => decideCreateRole(state, create({ permissions: [p] }))),
      { code: 'insufficient_authority' },
      `${p} never via a key`,
    );
  }
  t.match(
    refusal(() => decideCreateRole(state, create({ permissions: [...PERMISSIONS, 'emails:send'] }))),
    {
      code: 'invalid_parameter',
      param: 'permissions',
    },
  );
});

t.test('update: complete replacement, only newly added permissions need authority', async (t) => {
  const state = given([seeded, custom('role_c1', 'Support', ['emails:read', 'billing:read'])]);
  const narrow = { scopes: ['emails:send', 'roles:write'] as Permission[] };
  t.same(
    decideUpdateRole(state, update({ permissions: ['billing:read', 'emails:send'], caller: narrow })),
    [
      {
        type: 'RoleUpdated',
        data: {
          roleId: 'role_c1',
          name: 'Support',
          description: null,
          permissions: ['emails:send', 'billing:read'],
          updatedAt: LATER,
        },
      },
    ],
    'keeping a console-only permission is not granting it',
  );
  t.match(
    refusal(() => decideUpdateRole(state, update({ permissions: ['emails:read', 'contacts:read'], caller: narrow }))),
    {
      code: 'insufficient_authority',
      param: 'permissions.1',
    },
  );
});

t.test('update: name, description, no-op', async (t) => {
  const state = given([seeded, custom('role_c1', 'Support'), custom('role_c2', 'Sales')]);
  t.same(
    decideUpdateRole(state, update({ name: 'SUPPORT' }))[0],
    {
      type: 'RoleUpdated',
      data: { roleId: 'role_c1', name: 'SUPPORT', description: null, permissions: ['emails:read'], updatedAt: LATER },
    },
    'a role may change the case of its own name',
  );
  t.match(
    refusal(() => decideUpdateRole(state, update({ name: 'sales' }))),
    { code: 'role_name_taken', param: 'name' },
  );
  t.match(
    refusal(() => decideUpdateRole(state, update({ name: '' }))),
    { code: 'invalid_parameter', param: 'name' },
  );
  const described = given([
    seeded,
    custom('role_c1', 'Support'),
    decideUpdateRole(state, update({ description: ' Helps ' }))[0]!,
  ]);
  t.equal(described.roles.get('role_c1')!.description, 'Helps');
  t.match(decideUpdateRole(described, update({ description: null })), [{ data: { description: null } }], 'null clears');
  t.same(
    decideUpdateRole(state, update({ name: 'Support', permissions: ['emails:read'] })),
    [],
    'nothing changed, nothing written',
  );
});

t.test('update: the owner role is immutable, others are not; unknown is role_not_found', async (t) => {
  const state = given([seeded]);
  t.match(
    refusal(() => decideUpdateRole(state, update({ roleId: IDS.owner, name: 'Boss' }))),
    { code: 'role_immutable' },
  );
  t.equal(decideUpdateRole(state, update({ roleId: IDS.admin, name: 'Administrators' })).length, 1);
  t.match(
    refusal(() => decideUpdateRole(state, update({ roleId: 'role_nope' }))),
    { code: 'role_not_found', param: 'roleId' },
  );
});

t.test('delete: owner undeletable, held roles need reassignTo to another existing role', async (t) => {
  const state = given([seeded, custom('role_c1', 'Support')]);
  t.match(
    refusal(() => decideDeleteRole(state, remove({ roleId: IDS.owner }))),
    { code: 'role_undeletable' },
  );
  t.match(
    refusal(() => decideDeleteRole(state, remove({ roleId: 'role_nope' }))),
    { code: 'role_not_found', param: 'roleId' },
  );
  t.match(
    refusal(() => decideDeleteRole(state, remove({ holders: { members: 0, keys: 1 } }))),
    { code: 'role_in_use' },
  );
  t.match(
    refusal(() => decideDeleteRole(state, remove({ holders: { members: 2, keys: 0 } }))),
    { code: 'role_in_use' },
  );
  t.match(
    refusal(() => decideDeleteRole(state, remove({ reassignTo: 'role_c1' }))),
    { code: 'invalid_parameter', param: 'reassignTo' },
  );
  t.match(
    refusal(() => decideDeleteRole(state, remove({ reassignTo: 'role_nope' }))),
    { code: 'role_not_found', param: 'reassignTo' },
  );
  t.same(decideDeleteRole(state, remove({ reassignTo: IDS.viewer, holders: { members: 0, keys: 3 } })), [
    { type: 'RoleDeleted', data: { roleId: 'role_c1', reassignTo: IDS.viewer, deletedAt: LATER } },
  ]);
  t.same(decideDeleteRole(state, remove({ roleId: IDS.admin })), [
    { type: 'RoleDeleted', data: { roleId: IDS.admin, reassignTo: null, deletedAt: LATER } },
  ]);
});

t.test('delete: moving holders to a role needs the authority to grant every permission of it', async (t) => {
  const state = given([seeded, custom('role_c1', 'Support')]);
  for (const holders of [
    { members: 1, keys: 0 },
    { members: 0, keys: 1 },
    { members: 0, keys: 0 },
  ]) {
    t.match(
      refusal(() => decideDeleteRole(state, remove({ reassignTo: IDS.owner, holders }))),
      { code: 'insufficient_authority', param: 'reassignTo' },
      `${holders.members} members, ${holders.keys} keys: no caller of the API holds console-only permissions`,
    );
  }
  const roleWriter = { scopes: ['roles:read', 'roles:write', 'members:read'] as Permission[] };
  const narrow = given([
    seeded,
    custom('role_c1', 'Role writers', ['roles:write']),
    custom('role_c2', 'Readers', ['roles:read', 'members:read']),
  ]);
  t.match(
    refusal(() =>
      decideDeleteRole(
        narrow,
        remove({ reassignTo: IDS.viewer, holders: { members: 0, keys: 1 }, caller: roleWriter }),
      ),
    ),
    {
      code: 'insufficient_authority',
      param: 'reassignTo',
    },
    'a key under the role cannot move itself to a role wider than it',
  );
  t.equal(
    decideDeleteRole(narrow, remove({ reassignTo: 'role_c2', holders: { members: 0, keys: 1 }, caller: roleWriter }))
      .length,
    1,
    'to a role inside its authority it may',
  );
  t.equal(decideDeleteRole(state, remove({ reassignTo: IDS.viewer, holders: { members: 1, keys: 0 } })).length, 1);
});
