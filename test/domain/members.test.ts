import t from 'tap';
import {
  decideAcceptInvitation,
  decideChangeMemberRole,
  decideGrant,
  decideInviteMember,
  decideReassignRole,
  decideRemoveMember,
  decideRevoke,
  INVITATION_TTL_MS,
  PENDING_INVITATION_LIMIT,
  type InviteMember,
  type RoleFacts,
} from '../../domain/members/decide.ts';
import type { MemberEvent } from '../../domain/members/events.ts';
import { membersAggregate, type MembersState } from '../../domain/members/state.ts';
import { SCOPEABLE } from '../../domain/shared/permissions.ts';
import { refusal } from '../support/refusal.ts';

const NOW = '2026-01-01T00:00:00.000Z';
const at = (ms: number) => new Date(Date.parse(NOW) + ms).toISOString();
const owner = { userId: 'usr_owner', email: 'owner@example.com' };
const member: RoleFacts = { roleId: 'role_member', builtin: 'member', permissions: ['emails:read', 'emails:send'] };
const other: RoleFacts = { roleId: 'role_other', builtin: null, permissions: ['emails:read'] };
const caller = { scopes: [...SCOPEABLE] };

const given = (events: MemberEvent[]): MembersState =>
  events.reduce(membersAggregate.evolve, membersAggregate.initialState);
const invite = (o: Partial<InviteMember> = {}): InviteMember => ({
  invitationId: 'inv_1',
  nonce: 'n1',
  email: 'ann@example.com',
  role: member,
  addressIds: ['addr_a'],
  domainIds: ['dom_d'],
  access: 'viewer',
  owner,
  caller,
  now: NOW,
  ...o,
});
const invited = (o: Partial<InviteMember> = {}) => decideInviteMember(given([]), invite(o))[0]!;
const accepted: MemberEvent = {
  type: 'InvitationAccepted',
  data: {
    invitationId: 'inv_1',
    userId: 'usr_ann',
    email: 'ann@example.com',
    roleId: 'role_member',
    addressIds: ['addr_a'],
    domainIds: ['dom_d'],
    access: 'viewer',
    acceptedAt: NOW,
  },
};

t.test('an invitation grants nothing until accepted, then exactly what it carried', async (t) => {
  const e = invited();
  t.match(e, { type: 'MemberInvited', data: { invitationId: 'inv_1', email: 'ann@example.com', access: 'viewer' } });
  const state = given([e]);
  t.equal(state.members.size, 0, 'no membership before acceptance');
  const out = decideAcceptInvitation(state, { invitationId: 'inv_1', nonce: 'n1', userId: 'usr_ann', now: at(1000) });
  t.same(out, [{ ...accepted, data: { ...accepted.data, acceptedAt: at(1000) } }]);
  const after = given([e, ...out]);
  t.same([...after.members.get('usr_ann')!.addresses], [['addr_a', 'viewer']]);
  t.same([...after.members.get('usr_ann')!.domains], [['dom_d', 'viewer']]);
  t.equal(after.invitations.size, 0);
});

t.test('acceptance: only the newest link, once, before it expires', async (t) => {
  const state = given([invited()]);
  const accept =
    (o: object = {}) =>
    () =>
      decideAcceptInvitation(state, { invitationId: 'inv_1', nonce: 'n1', userId: 'usr_ann', now: NOW, ...o });
  t.equal(refusal(accept({ nonce: 'old' })).code, 'resource_not_found', 'a retired nonce');
  t.equal(refusal(accept({ invitationId: 'inv_2' })).code, 'resource_not_found', 'another id');
  t.equal(refusal(accept({ now: at(INVITATION_TTL_MS) })).code, 'resource_not_found', 'expired');
  const once = given([invited(), accepted]);
  t.equal(
    refusal(() => decideAcceptInvitation(once, { invitationId: 'inv_1', nonce: 'n1', userId: 'usr_ann', now: NOW }))
      .code,
    'resource_not_found',
    'a second acceptance',
  );
});

t.test('the same address: 409 within ten minutes, a refresh under the same id after', async (t) => {
  const state = given([invited()]);
  const soon = refusal(() => decideInviteMember(state, invite({ invitationId: 'inv_2', now: at(10 * 60_000 - 1) })));
  t.match(soon, { code: 'invitation_too_soon', param: 'email' });
  const [refreshed] = decideInviteMember(state, invite({ invitationId: 'inv_2', nonce: 'n2', now: at(10 * 60_000) }));
  t.match(refreshed, { type: 'MemberInvited', data: { invitationId: 'inv_1', nonce: 'n2' } });
  t.equal(
    refusal(() => decideInviteMember(state, invite({ email: ' ANN@example.com ', now: at(1) }))).code,
    'invitation_too_soon',
    'compared ignoring case and spaces',
  );
});

t.test('the owner and members already in are 422 member_is_owner', async (t) => {
  t.match(
    refusal(() => decideInviteMember(given([]), invite({ email: 'Owner@example.com' }))),
    {
      code: 'member_is_owner',
      param: 'email',
    },
  );
  t.match(
    refusal(() => decideInviteMember(given([invited(), accepted]), invite())),
    { code: 'member_is_owner' },
  );
});

t.test('100 pending invitations; expired ones do not count; a refresh is not a new one', async (t) => {
  const events = Array.from({ length: PENDING_INVITATION_LIMIT }, (_, i) =>
    invited({ invitationId: `inv_${i}`, email: `p${i}@example.com` }),
  );
  const full = given(events);
  t.match(
    refusal(() => decideInviteMember(full, invite({ invitationId: 'inv_x', email: 'x@example.com', now: at(1) }))),
    {
      code: 'workspace_limit_reached',
    },
  );
  t.equal(decideInviteMember(full, invite({ email: 'p0@example.com', now: at(600_000) })).length, 1, 'refresh');
  const oneLess = given(events.slice(1));
  t.equal(
    decideInviteMember(oneLess, invite({ invitationId: 'inv_x', email: 'x@example.com' })).length,
    1,
    'the 100th',
  );
  t.equal(
    decideInviteMember(full, invite({ invitationId: 'inv_x', email: 'x@example.com', now: at(INVITATION_TTL_MS) }))
      .length,
    1,
    'expired invitations are not pending',
  );
});

t.test('the role: not the owner role, nothing the caller could not grant', async (t) => {
  t.match(
    refusal(() => decideInviteMember(given([]), invite({ role: { ...member, builtin: 'owner' } }))),
    {
      code: 'invalid_parameter',
      param: 'roleId',
    },
  );
  t.match(
    refusal(() => decideInviteMember(given([]), invite({ caller: { scopes: ['emails:read'] } }))),
    {
      code: 'insufficient_authority',
      param: 'roleId',
    },
  );
  const admin: RoleFacts = { ...member, permissions: ['addresses:all', 'emails:read'] };
  t.equal(
    decideInviteMember(given([]), invite({ role: admin, caller: { scopes: ['emails:read'] } })).length,
    1,
    'console-only permissions are not asked of a key',
  );
});

t.test('update, remove and grants refuse the owner and strangers', async (t) => {
  const state = given([invited(), accepted]);
  const change = { owner, now: NOW };
  for (const [name, fn] of [
    ['update', (userId: string) => decideChangeMemberRole(state, { ...change, userId, role: other, caller })],
    ['remove', (userId: string) => decideRemoveMember(state, { ...change, userId })],
    [
      'grant',
      (userId: string) =>
        decideGrant(state, { ...change, userId, target: { kind: 'address', addressId: 'addr_b' }, access: 'member' }),
    ],
    [
      'revoke',
      (userId: string) => decideRevoke(state, { ...change, userId, target: { kind: 'domain', domainId: 'd' } }),
    ],
  ] as const) {
    t.match(
      refusal(() => fn('usr_owner')),
      { code: 'member_is_owner', param: 'userId' },
      `${name}: owner`,
    );
    t.match(
      refusal(() => fn('usr_nobody')),
      { code: 'resource_not_found', param: 'userId' },
      `${name}: stranger`,
    );
  }
});

t.test('changes of a member; repeats decide nothing', async (t) => {
  const state = given([invited(), accepted]);
  const base = { owner, now: NOW, userId: 'usr_ann' };
  t.same(decideChangeMemberRole(state, { ...base, role: other, caller }), [
    { type: 'MemberRoleChanged', data: { userId: 'usr_ann', roleId: 'role_other', changedAt: NOW } },
  ]);
  t.same(decideChangeMemberRole(state, { ...base, role: member, caller }), [], 'same role');
  t.match(
    refusal(() => decideChangeMemberRole(state, { ...base, role: null, caller })),
    { code: 'role_not_found', param: 'roleId' },
    'a role the read model does not have',
  );
  t.match(
    refusal(() => decideChangeMemberRole(state, { ...base, userId: 'usr_nobody', role: null, caller })),
    { code: 'resource_not_found', param: 'userId' },
    'a stranger before a missing role',
  );
  t.same(decideGrant(state, { ...base, target: { kind: 'address', addressId: 'addr_a' }, access: 'viewer' }), []);
  t.match(decideGrant(state, { ...base, target: { kind: 'address', addressId: 'addr_a' }, access: 'member' }), [
    { type: 'MemberAddressGranted', data: { addressId: 'addr_a', access: 'member' } },
  ]);
  t.match(decideGrant(state, { ...base, target: { kind: 'domain', domainId: 'dom_e' }, access: 'member' }), [
    { type: 'MemberDomainGranted', data: { domainId: 'dom_e' } },
  ]);
  t.match(decideRevoke(state, { ...base, target: { kind: 'domain', domainId: 'dom_d' } }), [
    { type: 'MemberDomainRevoked', data: { domainId: 'dom_d' } },
  ]);
  t.same(decideRevoke(state, { ...base, target: { kind: 'address', addressId: 'addr_z' } }), [], 'not held');
  const removed = given([invited(), accepted, ...decideRemoveMember(state, base)]);
  t.equal(removed.members.size, 0);
  t.equal(decideInviteMember(removed, invite({ invitationId: 'inv_9' })).length, 1, 'a removed member can be invited');
});

t.test('a deleted role moves its members and pending invitations', async (t) => {
  const state = given([invited(), accepted, invited({ invitationId: 'inv_2', email: 'bob@example.com' })]);
  const out = decideReassignRole(state, { fromRoleId: 'role_member', toRoleId: 'role_other', now: NOW });
  t.match(out, [{ type: 'MemberRolesReassigned' }]);
  const after = given([invited(), accepted, invited({ invitationId: 'inv_2', email: 'bob@example.com' }), ...out]);
  t.equal(after.members.get('usr_ann')!.roleId, 'role_other');
  t.equal(after.invitations.get('inv_2')!.roleId, 'role_other');
  t.same(decideReassignRole(after, { fromRoleId: 'role_member', toRoleId: 'role_other', now: NOW }), [], 'none left');
});
