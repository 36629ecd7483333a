import { SCOPEABLE } from '../../domain/shared/permissions.ts';
import { decideCreateWorkspace, workspaceAggregate } from '../../domain/workspaces/decide.ts';
import { workspaceStream } from '../../domain/workspaces/events.ts';
import { execute, type CommandContext } from '../execute.ts';
import { newId } from '../ids.ts';
import { issueOperatorKey } from '../api-keys/handlers.ts';
import { openAccount } from '../accounts/handlers.ts';

/**
 * An operator creates a workspace with its owner and a live owner key holding every scope-able
 * permission and no role ceiling.
 */
export async function createWorkspace(
  ctx: CommandContext,
  input: { name: string; ownerEmail: string },
  now = new Date().toISOString(),
) {
  const workspaceId = newId.workspace();
  const actor = { workspaceId, kind: 'operator' as const, id: null };
  const ownerEmail = input.ownerEmail.trim().toLowerCase();
  // The owner is a person like any other: one account per email, whichever workspaces they own.
  const ownerUserId = await openAccount(ctx, actor, ownerEmail, now);
  await execute(ctx, actor, workspaceStream(workspaceId), workspaceAggregate, (state) =>
    decideCreateWorkspace(state, {
      workspaceId,
      name: input.name,
      ownerUserId,
      ownerEmail,
      now,
    }),
  );
  const { token } = await issueOperatorKey(
    ctx,
    workspaceId,
    {
      name: 'Owner key',
      mode: 'live',
      scopes: [...SCOPEABLE],
      roleId: null,
      addressAllowlist: null,
      domainAllowlist: null,
      expiresAt: null,
    },
    now,
  );
  return { workspaceId, ownerUserId, apiKey: token };
}
