import {
  decideCreateRole,
  decideDeleteRole,
  decideSeedRoles,
  decideUpdateRole,
  type DeleteRole,
  type RoleCaller,
  type SeedIds,
  type UpdateRole,
} from '../../domain/roles/decide.ts';
import { rolesStream } from '../../domain/roles/events.ts';
import { BUILTINS } from '../../domain/roles/seeds.ts';
import { rolesAggregate } from '../../domain/roles/state.ts';
import type { Permission } from '../../domain/shared/permissions.ts';
import { reassignApiKeys } from '../api-keys/handlers.ts';
import { reassignMembers } from '../members/handlers.ts';
import { execute, type Actor, type CommandContext } from '../execute.ts';
import { newId } from '../ids.ts';

const seedIds = (): SeedIds => Object.fromEntries(BUILTINS.map((b) => [b, newId.role()])) as SeedIds;

/** Seeds the six roles the first time, afterwards restores the owner role if it is missing. */
export async function ensureSeeded(ctx: CommandContext, actor: Actor, now: string): Promise<void> {
  const ids = seedIds();
  await execute(ctx, actor, rolesStream(actor.workspaceId), rolesAggregate, (state) =>
    decideSeedRoles(state, { seedIds: ids, now }),
  );
}

export interface CreateRoleInput {
  name: string;
  description: string | null;
  permissions: Permission[];
}

export async function createRole(
  ctx: CommandContext,
  actor: Actor,
  caller: RoleCaller,
  input: CreateRoleInput,
  now: string,
): Promise<string> {
  const roleId = newId.role();
  const ids = seedIds();
  await execute(ctx, actor, rolesStream(actor.workspaceId), rolesAggregate, (state) =>
    decideCreateRole(state, { ...input, roleId, seedIds: ids, now, caller }),
  );
  return roleId;
}

export async function updateRole(ctx: CommandContext, actor: Actor, command: UpdateRole): Promise<void> {
  await execute(ctx, actor, rolesStream(actor.workspaceId), rolesAggregate, (state) =>
    decideUpdateRole(state, command),
  );
}

/**
 * The role goes first, then its keys move: the keys are a stream of their own, so the two writes
 * cannot be one (nor can the members' move, on their stream). If the second never happens, the keys point at a deleted role, which resolves to
 * no permissions at all, the safe failure. Moving keys first could widen them and then have the
 * delete refused, leaving authority granted by a delete that did not happen.
 */
export async function deleteRole(
  ctx: CommandContext,
  actor: Actor,
  command: DeleteRole,
): Promise<{ keysReassigned: number }> {
  await execute(ctx, actor, rolesStream(actor.workspaceId), rolesAggregate, (state) =>
    decideDeleteRole(state, command),
  );
  if (command.reassignTo === null) return { keysReassigned: 0 };
  await reassignMembers(ctx, actor, command.roleId, command.reassignTo, command.now);
  return { keysReassigned: await reassignApiKeys(ctx, actor, command.roleId, command.reassignTo) };
}
