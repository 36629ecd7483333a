import type { Access, MemberEvent } from './events.ts';

export interface Membership {
  email: string;
  roleId: string;
  addresses: Map<string, Access>;
  domains: Map<string, Access>;
}

export interface Invitation {
  email: string;
  roleId: string;
  addressIds: string[];
  domainIds: string[];
  access: Access;
  nonce: string;
  invitedAt: string;
}

export interface MembersState {
  members: Map<string, Membership>;
  /** Outstanding invitations by id (expired ones stay until refreshed; accepted ones go). */
  invitations: Map<string, Invitation>;
}

function withMember(state: MembersState, userId: string, change: (m: Membership) => Membership): MembersState {
  const m = state.members.get(userId);
  if (!m) return state;
  return { ...state, members: new Map(state.members).set(userId, change(m)) };
}

const without = <V>(map: Map<string, V>, key: string) => {
  const next = new Map(map);
  next.delete(key);
  return next;
};

export const membersAggregate = {
  initialState: { members: new Map(), invitations: new Map() } as MembersState,
  evolve(state: MembersState, event: MemberEvent): MembersState {
    switch (event.type) {
      case 'MemberInvited': {
        const { invitationId, ...invitation } = event.data;
        return { ...state, invitations: new Map(state.invitations).set(invitationId, invitation) };
      }
      case 'InvitationAccepted': {
        const d = event.data;
        const membership: Membership = {
          email: d.email,
          roleId: d.roleId,
          addresses: new Map(d.addressIds.map((id) => [id, d.access])),
          domains: new Map(d.domainIds.map((id) => [id, d.access])),
        };
        return {
          members: new Map(state.members).set(d.userId, membership),
          invitations: without(state.invitations, d.invitationId),
        };
      }
      case 'MemberRoleChanged':
        return withMember(state, event.data.userId, (m) => ({ ...m, roleId: event.data.roleId }));
      case 'MemberRemoved':
        return { ...state, members: without(state.members, event.data.userId) };
      case 'MemberAddressGranted':
        return withMember(state, event.data.userId, (m) => ({
          ...m,
          addresses: new Map(m.addresses).set(event.data.addressId, event.data.access),
        }));
      case 'MemberAddressRevoked':
        return withMember(state, event.data.userId, (m) => ({
          ...m,
          addresses: without(m.addresses, event.data.addressId),
        }));
      case 'MemberDomainGranted':
        return withMember(state, event.data.userId, (m) => ({
          ...m,
          domains: new Map(m.domains).set(event.data.domainId, event.data.access),
        }));
      case 'MemberDomainRevoked':
        return withMember(state, event.data.userId, (m) => ({
          ...m,
          domains: without(m.domains, event.data.domainId),
        }));
      case 'MemberRolesReassigned': {
        const { fromRoleId, toRoleId } = event.data;
        const members = new Map(
          [...state.members].map(([id, m]) => [id, m.roleId === fromRoleId ? { ...m, roleId: toRoleId } : m]),
        );
        const invitations = new Map(
          [...state.invitations].map(([id, i]) => [id, i.roleId === fromRoleId ? { ...i, roleId: toRoleId } : i]),
        );
        return { members, invitations };
      }
    }
  },
};
