import { decideCreateKey, decideReassignKeys, decideRevokeKey, decideRotateKey, type CallerAuthority } from '../../domain/api-keys/decide.ts';
import { apiKeysStream } from '../../domain/api-keys/events.ts';
import { apiKeysAggregate } from '../../domain/api-keys/state.ts';
import type { Allowlists } from '../../domain/shared/allowlists.ts';
import type { Permission } from '../../domain/shared/permissions.ts';
import { execute, type Actor, type CommandContext } from '../execute.ts';
import { mintToken } from './token.ts';

export interface CreateKeyInput extends Allowlists {
  name: string | null;
  mode: 'live' | 'test';
  scopes: Permission[];
  roleId: string | null;
  expiresAt: string | null;
}

/** Returns the new key's id and its token; the token exists only in this answer. */
export async function createApiKey(ctx: CommandContext, actor: Actor, caller: CallerAuthority, input: CreateKeyInput, now: string) {
  const minted = mintToken(input.mode);
  await execute(ctx, actor, apiKeysStream(actor.workspaceId), apiKeysAggregate, (state) =>
    decideCreateKey(state, { ...input, keyId: minted.keyId, secretHash: minted.secretHash, now, caller }),
  );
  return { keyId: minted.keyId, token: minted.token };
}

export async function rotateApiKey(ctx: CommandContext, actor: Actor, keyId: string, mode: 'live' | 'test', now: string) {
  const minted = mintToken(mode, keyId);
  const { events } = await execute(ctx, actor, apiKeysStream(actor.workspaceId), apiKeysAggregate, (state) =>
    decideRotateKey(state, { keyId, secretHash: minted.secretHash, now }),
  );
  const [rotated] = events;
  if (rotated?.type !== 'ApiKeyRotated') throw new Error('a rotation decides exactly one ApiKeyRotated');
  return { token: minted.token, rotationCount: rotated.data.rotationCount, rotatedAt: rotated.data.rotatedAt };
}

export async function revokeApiKey(ctx: CommandContext, actor: Actor, keyId: string, now: string) {
  await execute(ctx, actor, apiKeysStream(actor.workspaceId), apiKeysAggregate, (state) => decideRevokeKey(state, { keyId, now }));
}

export async function reassignApiKeys(ctx: CommandContext, actor: Actor, fromRoleId: string, toRoleId: string): Promise<number> {
  const { events } = await execute(ctx, actor, apiKeysStream(actor.workspaceId), apiKeysAggregate, (state) =>
    decideReassignKeys(state, { fromRoleId, toRoleId }),
  );
  const e = events[0];
  return e?.type === 'ApiKeysReassigned' ? e.data.keyIds.length : 0;
}
