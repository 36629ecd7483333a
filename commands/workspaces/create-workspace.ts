import { decideCreateKey } from '../../domain/api-keys/decide.ts';
import { apiKeysStream } from '../../domain/api-keys/events.ts';
import { apiKeysAggregate } from '../../domain/api-keys/state.ts';
import { SCOPEABLE } from '../../domain/shared/permissions.ts';
import { decideCreateWorkspace, workspaceAggregate } from '../../domain/workspace/decide.ts';
import { workspaceStream } from '../../domain/workspace/events.ts';
import { execute, type CommandContext } from '../execute.ts';
import { newId } from '../ids.ts';
import { mintToken } from '../api-keys/token.ts';

/**
 * An operator creates a workspace with its owner and a live owner key holding every scope-able
 * permission and no role ceiling.
 */
export async function createWorkspace(ctx: CommandContext, input: { name: string; ownerEmail: string }, now = new Date().toISOString()) {
  const workspaceId = newId.workspace();
  const ownerUserId = newId.user();
  const actor = { workspaceId, kind: 'operator' as const, id: null };
  await execute(ctx, actor, workspaceStream(workspaceId), workspaceAggregate, (state) =>
    decideCreateWorkspace(state, { workspaceId, name: input.name, ownerUserId, ownerEmail: input.ownerEmail.trim().toLowerCase(), now }),
  );
  const minted = mintToken('live');
  await execute(ctx, actor, apiKeysStream(workspaceId), apiKeysAggregate, (state) =>
    decideCreateKey(state, {
      keyId: minted.keyId,
      secretHash: minted.secretHash,
      name: 'Owner key',
      mode: 'live',
      scopes: [...SCOPEABLE],
      roleId: null,
      addressAllowlist: null,
      domainAllowlist: null,
      expiresAt: null,
      now,
      caller: { keyId: null, mode: 'live', scopes: [...SCOPEABLE], addressAllowlist: null, domainAllowlist: null },
    }),
  );
  return { workspaceId, ownerUserId, apiKey: minted.token };
}
