import { fail } from '../shared/errors.ts';
import { PERMISSIONS, expandPermissions, type Permission } from '../shared/permissions.ts';
import type { RoleEvent } from './events.ts';
import { BUILTINS, seedRole, type Builtin } from './seeds.ts';
import { customRoleCount, ownerRoleId, rolesAggregate, type RoleState, type RolesState } from './state.ts';

export const CUSTOM_ROLE_LIMIT = 24;
export const NAME_MAX = 48;
export const DESCRIPTION_MAX = 240;
export const PERMISSIONS_MAX = PERMISSIONS.length;

/** The effective scopes of whoever changes roles: nobody grants what they do not hold. */
export interface RoleCaller {
  scopes: readonly Permission[];
}

/** Ids for the seeded roles, minted by the command in case this decision seeds. */
export type SeedIds = Record<Builtin, string>;

export interface SeedRoles {
  seedIds: SeedIds;
  now: string;
}

/** Seeds the built-in roles once, and brings the owner role back if it was ever gone. */
export function decideSeedRoles(state: RolesState, cmd: SeedRoles): RoleEvent[] {
  if (!state.seeded) {
    return [
      { type: 'RolesSeeded', data: { roles: BUILTINS.map((b) => seedRole(b, cmd.seedIds[b])), seededAt: cmd.now } },
    ];
  }
  if (ownerRoleId(state) === undefined) {
    return [{ type: 'OwnerRoleRestored', data: { role: seedRole('owner', cmd.seedIds.owner), restoredAt: cmd.now } }];
  }
  return [];
}

export interface CreateRole extends SeedRoles {
  roleId: string;
  name: string;
  description: string | null;
  permissions: Permission[];
  caller: RoleCaller;
}

/**
 * A workspace's roles are seeded before its first custom role, so a custom name can never
 * collide with a seeded one arriving later.
 */
export function decideCreateRole(state: RolesState, cmd: CreateRole): RoleEvent[] {
  const seeding = state.seeded ? [] : decideSeedRoles(state, cmd);
  const current = seeding.reduce(rolesAggregate.evolve, state);
  const name = roleName(cmd.name);
  const description = roleDescription(cmd.description);
  const permissions = grantable(cmd.permissions, [], cmd.caller);
  nameFree(current, name, null);
  if (customRoleCount(current) >= CUSTOM_ROLE_LIMIT) {
    fail('workspace_limit_reached', `A workspace holds at most ${CUSTOM_ROLE_LIMIT} custom roles.`);
  }
  return [
    ...seeding,
    { type: 'RoleCreated', data: { roleId: cmd.roleId, name, description, permissions, createdAt: cmd.now } },
  ];
}

export interface UpdateRole {
  roleId: string;
  name?: string;
  /** null clears the description; absent keeps it. */
  description?: string | null;
  /** A complete replacement of the list. */
  permissions?: Permission[];
  now: string;
  caller: RoleCaller;
}

export function decideUpdateRole(state: RolesState, cmd: UpdateRole): RoleEvent[] {
  const role = existingRole(state, cmd.roleId, 'roleId');
  if (role.builtin === 'owner') fail('role_immutable', 'The owner role cannot be edited.');
  const name = cmd.name === undefined ? role.name : roleName(cmd.name);
  const description = cmd.description === undefined ? role.description : roleDescription(cmd.description);
  const permissions =
    cmd.permissions === undefined ? role.permissions : grantable(cmd.permissions, role.permissions, cmd.caller);
  if (name.toLowerCase() !== role.name.toLowerCase()) nameFree(state, name, cmd.roleId);
  const unchanged =
    name === role.name && description === role.description && permissions.join() === role.permissions.join();
  if (unchanged) return [];
  return [{ type: 'RoleUpdated', data: { roleId: cmd.roleId, name, description, permissions, updatedAt: cmd.now } }];
}

export interface DeleteRole {
  roleId: string;
  reassignTo: string | null;
  /** Who holds the role now, as the read models see it. */
  holders: { members: number; keys: number };
  now: string;
  caller: RoleCaller;
}

export function decideDeleteRole(state: RolesState, cmd: DeleteRole): RoleEvent[] {
  const role = existingRole(state, cmd.roleId, 'roleId');
  if (role.builtin === 'owner') fail('role_undeletable', 'The owner role cannot be deleted.');
  if (cmd.reassignTo !== null) {
    if (cmd.reassignTo === cmd.roleId) fail('invalid_parameter', '`reassignTo` must name another role.', 'reassignTo');
    const target = existingRole(state, cmd.reassignTo, 'reassignTo');
    // Everyone moved (the caller's own key among them when it holds the role) gets the target's
    // permissions as their ceiling, so only a caller who could grant each of them may move anyone
    // there. Checked whatever the holder counts say: they come from read models, and the keys move
    // afterwards from their own stream.
    const lacking = target.permissions.find((p) => !cmd.caller.scopes.includes(p));
    if (lacking)
      fail(
        'insufficient_authority',
        `Reassigning to this role would grant \`${lacking}\`, which the caller does not hold.`,
        'reassignTo',
      );
  } else if (cmd.holders.members + cmd.holders.keys > 0) {
    fail(
      'role_in_use',
      'Members, keys or invitations hold the role; pass `reassignTo` to move them to another role.',
      'reassignTo',
    );
  }
  return [{ type: 'RoleDeleted', data: { roleId: cmd.roleId, reassignTo: cmd.reassignTo, deletedAt: cmd.now } }];
}

function existingRole(state: RolesState, roleId: string, param: string): RoleState {
  const role = state.roles.get(roleId);
  if (!role) fail('role_not_found', 'No such role in this workspace.', param);
  return role;
}

/** Characters, not UTF-16 units: a name of 48 emoji is 48 characters. */
const length = (s: string) => [...s].length;

function roleName(raw: string): string {
  const name = raw.trim();
  if (name === '') fail('invalid_parameter', '`name` must not be blank.', 'name');
  if (length(name) > NAME_MAX) fail('invalid_parameter', `\`name\` is at most ${NAME_MAX} characters.`, 'name');
  return name;
}

function roleDescription(raw: string | null): string | null {
  const description = raw?.trim() || null;
  if (description !== null && length(description) > DESCRIPTION_MAX) {
    fail('invalid_parameter', `\`description\` is at most ${DESCRIPTION_MAX} characters.`, 'description');
  }
  return description;
}

function nameFree(state: RolesState, name: string, exceptId: string | null): void {
  const lower = name.toLowerCase();
  for (const [id, r] of state.roles) {
    if (id !== exceptId && r.name.toLowerCase() === lower)
      fail('role_name_taken', `A role named \`${r.name}\` exists already.`, 'name');
  }
}

/**
 * The stored (expanded) list, once the caller is found to hold everything it newly grants; an
 * implied permission counts against the entry that brings it.
 */
function grantable(requested: Permission[], held: readonly Permission[], caller: RoleCaller): Permission[] {
  if (requested.length > PERMISSIONS_MAX)
    fail('invalid_parameter', `\`permissions\` holds at most ${PERMISSIONS_MAX} entries.`, 'permissions');
  requested.forEach((p, i) => {
    const lacking = expandPermissions([p]).find((q) => !held.includes(q) && !caller.scopes.includes(q));
    if (lacking)
      fail(
        'insufficient_authority',
        `The caller does not hold \`${lacking}\`, so it cannot grant it.`,
        `permissions.${i}`,
      );
  });
  return expandPermissions(requested);
}
