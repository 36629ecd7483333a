import { decideAddSuppression, decideRemoveSuppression } from '../../domain/suppressions/decide.ts';
import { normaliseAddress, suppressionStream, type SuppressionReason } from '../../domain/suppressions/events.ts';
import { suppressionAggregate, type SuppressionEntry } from '../../domain/suppressions/state.ts';
import { execute, type Actor, type CommandContext } from '../execute.ts';
import { newId } from '../ids.ts';

export interface AddSuppressionInput {
  email: string;
  reason: SuppressionReason;
  detail: string | null;
}

/**
 * Suppresses an address, or finds it suppressed already, and answers with the entry the decision
 * saw (a removal racing in right after cannot leave the caller without one). The API adds `manual`
 * entries; the sending pipeline adds `bounce` and `complaint` entries through this same command.
 */
export async function addSuppression(
  ctx: CommandContext,
  actor: Actor,
  input: AddSuppressionInput,
  now: string,
): Promise<{ created: boolean; suppressionId: string; entry: SuppressionEntry }> {
  const email = normaliseAddress(input.email);
  const { state, events } = await execute(
    ctx,
    actor,
    suppressionStream(actor.workspaceId, email),
    suppressionAggregate,
    (s) =>
      decideAddSuppression(s, {
        suppressionId: newId.suppression(),
        email,
        reason: input.reason,
        detail: input.detail,
        now,
      }),
    // Adding is mostly of addresses never suppressed: the bulk adds of an import, the pipeline's bounces.
    { likelyNew: true },
  );
  const entry = state.entry!;
  return { created: events.length > 0, suppressionId: entry.suppressionId, entry };
}

export async function removeSuppression(
  ctx: CommandContext,
  actor: Actor,
  input: { suppressionId: string; email: string },
  now: string,
) {
  await execute(ctx, actor, suppressionStream(actor.workspaceId, input.email), suppressionAggregate, (s) =>
    decideRemoveSuppression(s, { suppressionId: input.suppressionId, now }),
  );
}
