import { z } from 'zod';
import { defineEvent, type EventOf } from '../shared/events.ts';
import { BUILTINS } from './seeds.ts';

const seededRole = z.object({
  roleId: z.string(),
  builtin: z.enum(BUILTINS),
  name: z.string(),
  description: z.string().nullable(),
  permissions: z.array(z.string()),
});

/** The six seeded roles, written once per workspace on the first read of the list. */
export const RolesSeeded = defineEvent('RolesSeeded', z.object({ roles: z.array(seededRole), seededAt: z.string() }));

/** The owner role came back after a list read found it missing. */
export const OwnerRoleRestored = defineEvent(
  'OwnerRoleRestored',
  z.object({ role: seededRole, restoredAt: z.string() }),
);

export const RoleCreated = defineEvent(
  'RoleCreated',
  z.object({
    roleId: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    permissions: z.array(z.string()),
    createdAt: z.string(),
  }),
);

/** The role as it stands after the change: every field, so applying it twice changes nothing. */
export const RoleUpdated = defineEvent(
  'RoleUpdated',
  z.object({
    roleId: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    permissions: z.array(z.string()),
    updatedAt: z.string(),
  }),
);

/** `reassignTo` receives the members, keys and pending invitations that held the role. */
export const RoleDeleted = defineEvent(
  'RoleDeleted',
  z.object({ roleId: z.string(), reassignTo: z.string().nullable(), deletedAt: z.string() }),
);

export const roleEvents = [RolesSeeded, OwnerRoleRestored, RoleCreated, RoleUpdated, RoleDeleted];
export type RoleEvent =
  | EventOf<typeof RolesSeeded>
  | EventOf<typeof OwnerRoleRestored>
  | EventOf<typeof RoleCreated>
  | EventOf<typeof RoleUpdated>
  | EventOf<typeof RoleDeleted>;

/**
 * All roles of a workspace are one aggregate: name uniqueness, the custom-role limit and seeding
 * once are decided on one stream, so optimistic concurrency settles races between them.
 */
export const rolesStream = (workspaceId: string) => `ws-${workspaceId}.roles`;
