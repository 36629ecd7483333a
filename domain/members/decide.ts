import { fail } from '../shared/errors.ts';
import { CONSOLE_ONLY, type Permission } from '../shared/permissions.ts';
import type { Access, MemberEvent } from './events.ts';
import type { Invitation, Membership, MembersState } from './state.ts';

export const PENDING_INVITATION_LIMIT = 100;
/** The same address is invited again only after ten minutes (spec Limits). */
export const INVITATION_SPACING_MS = 10 * 60_000;
/** How long an invitation's link works; after that it counts as no longer pending. */
export const INVITATION_TTL_MS = 7 * 24 * 3_600_000;

/** The workspace's owner, from the workspace stream: never a member row of this aggregate. */
export interface Owner {
  userId: string;
  email: string;
}

/** A role as the command found it in the roles read model. */
export interface RoleFacts {
  roleId: string;
  builtin: string | null;
  permissions: readonly Permission[];
}

export interface Caller {
  scopes: readonly Permission[];
}

/** When an invitation's link stops working (ms since the epoch): the decider, the page, the mail and the view agree on it. */
export const invitationExpiry = (invitedAt: string | Date): number => new Date(invitedAt).getTime() + INVITATION_TTL_MS;

const pending = (i: Invitation, now: string) => invitationExpiry(i.invitedAt) > Date.parse(now);

/**
 * Nobody is given a role whose permissions the caller could not grant itself. Console-only
 * permissions no key or token holds, so they are left to the console and not asked of the caller.
 */
function assignable(role: RoleFacts, caller: Caller): void {
  if (role.builtin === 'owner')
    fail('invalid_parameter', 'The owner role is held by the workspace owner alone.', 'roleId');
  const lacking = role.permissions.find((p) => !CONSOLE_ONLY.has(p) && !caller.scopes.includes(p));
  if (lacking)
    fail('insufficient_authority', `The role grants \`${lacking}\`, which the caller does not hold.`, 'roleId');
}

export interface InviteMember {
  invitationId: string;
  nonce: string;
  email: string;
  role: RoleFacts;
  addressIds: string[];
  domainIds: string[];
  access: Access;
  owner: Owner;
  caller: Caller;
  now: string;
}

export function decideInviteMember(state: MembersState, cmd: InviteMember): MemberEvent[] {
  const email = cmd.email.trim().toLowerCase();
  const inWorkspace =
    email === cmd.owner.email.toLowerCase() || [...state.members.values()].some((m) => m.email === email);
  if (inWorkspace) fail('member_is_owner', 'The person is in the workspace already (or owns it).', 'email');
  assignable(cmd.role, cmd.caller);
  const outstanding = [...state.invitations].find(([, i]) => i.email === email);
  if (outstanding && Date.parse(cmd.now) - Date.parse(outstanding[1].invitedAt) < INVITATION_SPACING_MS) {
    fail('invitation_too_soon', 'The address was invited less than ten minutes ago.', 'email');
  }
  if (!outstanding) {
    const count = [...state.invitations.values()].filter((i) => pending(i, cmd.now)).length;
    if (count >= PENDING_INVITATION_LIMIT)
      fail('workspace_limit_reached', `A workspace holds at most ${PENDING_INVITATION_LIMIT} pending invitations.`);
  }
  return [
    {
      type: 'MemberInvited',
      data: {
        invitationId: outstanding?.[0] ?? cmd.invitationId,
        email,
        roleId: cmd.role.roleId,
        addressIds: [...new Set(cmd.addressIds)],
        domainIds: [...new Set(cmd.domainIds)],
        access: cmd.access,
        nonce: cmd.nonce,
        invitedAt: cmd.now,
      },
    },
  ];
}

export interface AcceptInvitation {
  invitationId: string;
  nonce: string;
  /** The account of the invited email (made by the command if it was new). */
  userId: string;
  now: string;
}

/** Only the newest link of a pending invitation works, once: a second acceptance finds it gone. */
export function decideAcceptInvitation(state: MembersState, cmd: AcceptInvitation): MemberEvent[] {
  const invitation = state.invitations.get(cmd.invitationId);
  if (!invitation || invitation.nonce !== cmd.nonce || !pending(invitation, cmd.now))
    fail('resource_not_found', 'The invitation was accepted already, replaced by a newer one, or has expired.');
  const { nonce: _nonce, invitedAt: _at, ...carried } = invitation;
  return [
    {
      type: 'InvitationAccepted',
      data: { invitationId: cmd.invitationId, userId: cmd.userId, ...carried, acceptedAt: cmd.now },
    },
  ];
}

/** The owner is refused before anything else; anyone else must hold a membership. */
function member(state: MembersState, owner: Owner, userId: string): Membership {
  if (userId === owner.userId) fail('member_is_owner', 'The workspace owner cannot be changed this way.', 'userId');
  const m = state.members.get(userId);
  if (!m) fail('resource_not_found', 'No such member in this workspace.', 'userId');
  return m;
}

export interface MemberChange {
  userId: string;
  owner: Owner;
  now: string;
}

/** `role` is null when the read model has no such role: refused only after the owner and strangers are. */
export function decideChangeMemberRole(
  state: MembersState,
  cmd: MemberChange & { role: RoleFacts | null; caller: Caller },
): MemberEvent[] {
  const m = member(state, cmd.owner, cmd.userId);
  if (!cmd.role) fail('role_not_found', 'No such role in this workspace.', 'roleId');
  assignable(cmd.role, cmd.caller);
  if (m.roleId === cmd.role.roleId) return [];
  return [{ type: 'MemberRoleChanged', data: { userId: cmd.userId, roleId: cmd.role.roleId, changedAt: cmd.now } }];
}

export function decideRemoveMember(state: MembersState, cmd: MemberChange): MemberEvent[] {
  member(state, cmd.owner, cmd.userId);
  return [{ type: 'MemberRemoved', data: { userId: cmd.userId, removedAt: cmd.now } }];
}

export type GrantTarget = { kind: 'address'; addressId: string } | { kind: 'domain'; domainId: string };

export function decideGrant(
  state: MembersState,
  cmd: MemberChange & { target: GrantTarget; access: Access },
): MemberEvent[] {
  const m = member(state, cmd.owner, cmd.userId);
  const t = cmd.target;
  const held = t.kind === 'address' ? m.addresses.get(t.addressId) : m.domains.get(t.domainId);
  if (held === cmd.access) return [];
  const base = { userId: cmd.userId, access: cmd.access, grantedAt: cmd.now };
  return [
    t.kind === 'address'
      ? { type: 'MemberAddressGranted', data: { ...base, addressId: t.addressId } }
      : { type: 'MemberDomainGranted', data: { ...base, domainId: t.domainId } },
  ];
}

/** Revoking what is not held decides nothing, so a repeat is harmless. */
export function decideRevoke(state: MembersState, cmd: MemberChange & { target: GrantTarget }): MemberEvent[] {
  const m = member(state, cmd.owner, cmd.userId);
  const t = cmd.target;
  const base = { userId: cmd.userId, revokedAt: cmd.now };
  if (t.kind === 'address')
    return m.addresses.has(t.addressId)
      ? [{ type: 'MemberAddressRevoked', data: { ...base, addressId: t.addressId } }]
      : [];
  return m.domains.has(t.domainId) ? [{ type: 'MemberDomainRevoked', data: { ...base, domainId: t.domainId } }] : [];
}

/** After a role is deleted: its members and invitations move to `toRoleId`. */
export function decideReassignRole(
  state: MembersState,
  cmd: { fromRoleId: string; toRoleId: string; now: string },
): MemberEvent[] {
  const held =
    [...state.members.values()].some((m) => m.roleId === cmd.fromRoleId) ||
    [...state.invitations.values()].some((i) => i.roleId === cmd.fromRoleId);
  if (!held) return [];
  return [
    {
      type: 'MemberRolesReassigned',
      data: { fromRoleId: cmd.fromRoleId, toRoleId: cmd.toRoleId, reassignedAt: cmd.now },
    },
  ];
}
