import {
  decideCreateApiKey,
  decideReassignApiKeys,
  decideRevokeApiKey,
  decideRotateApiKey,
  type CallerAuthority,
} from '../../domain/api-keys/decide.ts';
import { apiKeysStream } from '../../domain/api-keys/events.ts';
import { apiKeysAggregate } from '../../domain/api-keys/state.ts';
import { rolesStream } from '../../domain/roles/events.ts';
import { rolesAggregate } from '../../domain/roles/state.ts';
import type { Allowlists } from '../../domain/shared/allowlists.ts';
import { fail } from '../../domain/shared/errors.ts';
import { SCOPEABLE, type Permission } from '../../domain/shared/permissions.ts';
import { workspaceAggregate } from '../../domain/workspaces/decide.ts';
import { workspaceStream } from '../../domain/workspaces/events.ts';
import { execute, loadState, type Actor, type CommandContext } from '../execute.ts';
import { mintToken } from './token.ts';

export interface CreateKeyInput extends Allowlists {
  name: string | null;
  mode: 'live' | 'test';
  scopes: Permission[];
  roleId: string | null;
  expiresAt: string | null;
}

/** Returns the new key's id and its token; the token exists only in this answer. */
export async function createApiKey(
  ctx: CommandContext,
  actor: Actor,
  caller: CallerAuthority,
  input: CreateKeyInput,
  now: string,
) {
  const minted = mintToken(input.mode);
  await execute(ctx, actor, apiKeysStream(actor.workspaceId), apiKeysAggregate, (state) =>
    decideCreateApiKey(state, { ...input, keyId: minted.keyId, secretHash: minted.secretHash, now, caller }),
  );
  return { keyId: minted.keyId, token: minted.token };
}

/** An operator stands outside the workspace's keys: every scope-able permission, live, every address. */
const OPERATOR: CallerAuthority = {
  keyId: null,
  mode: 'live',
  scopes: [...SCOPEABLE],
  addressAllowlist: null,
  domainAllowlist: null,
};

/**
 * An operator (the CLI) issues a key for a workspace: its owner key at creation, and the way back
 * in when no key of the workspace can manage keys any more. The workspace and the role are checked
 * on their streams, the source of truth, as the operator may run before any read model has caught up.
 */
export async function issueOperatorKey(ctx: CommandContext, workspaceId: string, input: CreateKeyInput, now: string) {
  if (!(await loadState(ctx, workspaceStream(workspaceId), workspaceAggregate)).state.exists) {
    fail('resource_not_found', 'No such workspace.', 'workspace');
  }
  if (
    input.roleId !== null &&
    !(await loadState(ctx, rolesStream(workspaceId), rolesAggregate)).state.roles.has(input.roleId)
  ) {
    fail('role_not_found', 'No such role in this workspace.', 'roleId');
  }
  return createApiKey(ctx, { workspaceId, kind: 'operator', id: null }, OPERATOR, input, now);
}

export async function rotateApiKey(
  ctx: CommandContext,
  actor: Actor,
  keyId: string,
  mode: 'live' | 'test',
  now: string,
) {
  const minted = mintToken(mode, keyId);
  const { events } = await execute(ctx, actor, apiKeysStream(actor.workspaceId), apiKeysAggregate, (state) =>
    decideRotateApiKey(state, { keyId, secretHash: minted.secretHash, now }),
  );
  const [rotated] = events;
  if (rotated?.type !== 'ApiKeyRotated') throw new Error('a rotation decides exactly one ApiKeyRotated');
  return { token: minted.token, rotationCount: rotated.data.rotationCount, rotatedAt: rotated.data.rotatedAt };
}

export async function revokeApiKey(
  ctx: CommandContext,
  actor: Actor,
  caller: CallerAuthority,
  keyId: string,
  now: string,
) {
  await execute(ctx, actor, apiKeysStream(actor.workspaceId), apiKeysAggregate, (state) =>
    decideRevokeApiKey(state, { keyId, now, caller }),
  );
}

export async function reassignApiKeys(
  ctx: CommandContext,
  actor: Actor,
  fromRoleId: string,
  toRoleId: string,
): Promise<number> {
  const { events } = await execute(ctx, actor, apiKeysStream(actor.workspaceId), apiKeysAggregate, (state) =>
    decideReassignApiKeys(state, { fromRoleId, toRoleId }),
  );
  const e = events[0];
  return e?.type === 'ApiKeysReassigned' ? e.data.keyIds.length : 0;
}
