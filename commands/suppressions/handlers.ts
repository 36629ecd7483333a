import { decideAddSuppression, decideRemoveSuppression } from '../../domain/suppressions/decide.ts';
import {
  normaliseAddress,
  suppressionStream,
  type SuppressionEvent,
  type SuppressionReason,
} from '../../domain/suppressions/events.ts';
import { suppressionAggregate, type SuppressionEntry, type SuppressionState } from '../../domain/suppressions/state.ts';
import { execute, executeNew, type Actor, type CommandContext, type NewStreamCommand } from '../execute.ts';
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
  const { streamId, decide } = addCommand(actor, input, now);
  // Adding is mostly of addresses never suppressed: the pipeline's bounces, an import's pages.
  return added(await execute(ctx, actor, streamId, suppressionAggregate, decide, { likelyNew: true }));
}

/**
 * `addSuppression` for many addresses (a page of an import), their additions appended together
 * (`executeNew`). Answers each one's outcome in their order.
 */
export async function addSuppressions(
  ctx: CommandContext,
  actor: Actor,
  inputs: readonly AddSuppressionInput[],
  now: string,
): Promise<PromiseSettledResult<{ created: boolean; suppressionId: string; entry: SuppressionEntry }>[]> {
  const executed = await executeNew(
    ctx,
    actor,
    suppressionAggregate,
    inputs.map((input) => addCommand(actor, input, now)),
  );
  return executed.map((r) => (r.status === 'fulfilled' ? { status: 'fulfilled', value: added(r.value) } : r));
}

function addCommand(
  actor: Actor,
  input: AddSuppressionInput,
  now: string,
): NewStreamCommand<SuppressionState, SuppressionEvent> {
  const email = normaliseAddress(input.email);
  const suppressionId = newId.suppression();
  return {
    streamId: suppressionStream(actor.workspaceId, email),
    decide: (s) => decideAddSuppression(s, { suppressionId, email, reason: input.reason, detail: input.detail, now }),
  };
}

/** The entry the decision saw, new or there already. */
const added = ({ state, events }: { state: SuppressionState; events: unknown[] }) => ({
  created: events.length > 0,
  suppressionId: state.entry!.suppressionId,
  entry: state.entry!,
});

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
