import { decideCreateLabel, decideDeleteLabel, decideUpdateLabel } from '../../domain/labels/decide.ts';
import { type LabelEvent, labelsStream } from '../../domain/labels/events.ts';
import { labelsAggregate, type LabelsState } from '../../domain/labels/state.ts';
import { execute, loadState, type Actor, type CommandContext } from '../execute.ts';
import { newId } from '../ids.ts';

/** A mailbox as labels know it: its stream's owner (domain/labels/events.ts) and the address shown. */
export interface LabelOwner {
  owner: string;
  address: string;
}

const run = (ctx: CommandContext, actor: Actor, owner: string, decide: (s: LabelsState) => LabelEvent[]) =>
  execute(ctx, actor, labelsStream(actor.workspaceId, owner), labelsAggregate, decide);

export async function createLabel(
  ctx: CommandContext,
  actor: Actor,
  input: LabelOwner & { name: string; color: string | null },
  now: string,
) {
  const labelId = newId.label();
  await run(ctx, actor, input.owner, (s) => decideCreateLabel(s, { ...input, labelId, now }));
  return { labelId };
}

export const updateLabel = (
  ctx: CommandContext,
  actor: Actor,
  input: { owner: string; labelId: string; name?: string; color?: string | null },
  now: string,
) => run(ctx, actor, input.owner, (s) => decideUpdateLabel(s, { ...input, now }));

export const deleteLabel = (
  ctx: CommandContext,
  actor: Actor,
  input: { owner: string; labelId: string },
  now: string,
) => run(ctx, actor, input.owner, (s) => decideDeleteLabel(s, { ...input, now }));

/** The live custom labels of a mailbox, from its stream (not the read model): what a thread may carry. */
export async function labelsOfMailbox(ctx: CommandContext, workspaceId: string, owner: string) {
  const { state } = await loadState(ctx, labelsStream(workspaceId, owner), labelsAggregate);
  return new Set(state.labels.keys());
}
