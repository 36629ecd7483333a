import { z } from 'zod';
import { defineEvent, type EventOf } from '../shared/events.ts';

export const ACCESS = ['member', 'viewer'] as const;
export type Access = (typeof ACCESS)[number];
const access = z.enum(ACCESS);

/**
 * An invitation sent, or refreshed under the same id (a new `nonce` retires the links mailed
 * before). It grants nothing until accepted.
 */
export const MemberInvited = defineEvent(
  'MemberInvited',
  z.object({
    invitationId: z.string(),
    email: z.string(),
    roleId: z.string(),
    addressIds: z.array(z.string()),
    domainIds: z.array(z.string()),
    access,
    nonce: z.string(),
    invitedAt: z.string(),
  }),
);

/** The membership and exactly the grants the invitation carried, as it stood when accepted. */
export const InvitationAccepted = defineEvent(
  'InvitationAccepted',
  z.object({
    invitationId: z.string(),
    userId: z.string(),
    email: z.string(),
    roleId: z.string(),
    addressIds: z.array(z.string()),
    domainIds: z.array(z.string()),
    access,
    acceptedAt: z.string(),
  }),
);

export const MemberRoleChanged = defineEvent(
  'MemberRoleChanged',
  z.object({ userId: z.string(), roleId: z.string(), changedAt: z.string() }),
);

/** The membership ends and its grants with it. */
export const MemberRemoved = defineEvent('MemberRemoved', z.object({ userId: z.string(), removedAt: z.string() }));

export const MemberAddressGranted = defineEvent(
  'MemberAddressGranted',
  z.object({ userId: z.string(), addressId: z.string(), access, grantedAt: z.string() }),
);
export const MemberAddressRevoked = defineEvent(
  'MemberAddressRevoked',
  z.object({ userId: z.string(), addressId: z.string(), revokedAt: z.string() }),
);
export const MemberDomainGranted = defineEvent(
  'MemberDomainGranted',
  z.object({ userId: z.string(), domainId: z.string(), access, grantedAt: z.string() }),
);
export const MemberDomainRevoked = defineEvent(
  'MemberDomainRevoked',
  z.object({ userId: z.string(), domainId: z.string(), revokedAt: z.string() }),
);

/** A deleted role's members and pending invitations moved to `toRoleId` (the roles stream deleted it). */
export const MemberRolesReassigned = defineEvent(
  'MemberRolesReassigned',
  z.object({ fromRoleId: z.string(), toRoleId: z.string(), reassignedAt: z.string() }),
);

export const memberEvents = [
  MemberInvited,
  InvitationAccepted,
  MemberRoleChanged,
  MemberRemoved,
  MemberAddressGranted,
  MemberAddressRevoked,
  MemberDomainGranted,
  MemberDomainRevoked,
  MemberRolesReassigned,
];
export type MemberEvent =
  | EventOf<typeof MemberInvited>
  | EventOf<typeof InvitationAccepted>
  | EventOf<typeof MemberRoleChanged>
  | EventOf<typeof MemberRemoved>
  | EventOf<typeof MemberAddressGranted>
  | EventOf<typeof MemberAddressRevoked>
  | EventOf<typeof MemberDomainGranted>
  | EventOf<typeof MemberDomainRevoked>
  | EventOf<typeof MemberRolesReassigned>;

/**
 * Every member and invitation of a workspace is one aggregate: "already in the workspace", the
 * ten-minute spacing per address and the 100 pending invitations are decided over the whole set.
 */
export const membersStream = (workspaceId: string) => `ws-${workspaceId}.members`;
