import {
  decideCreateAutomation,
  decideDeleteAutomation,
  decideUpdateAutomation,
  type Definition,
} from '../../domain/automations/decide.ts';
import { automationStream } from '../../domain/automations/events.ts';
import { automationAggregate } from '../../domain/automations/state.ts';
import { execute, type Actor, type CommandContext } from '../execute.ts';
import { newId } from '../ids.ts';

export async function createAutomation(
  ctx: CommandContext,
  actor: Actor,
  input: { definition: Definition; status: 'live' | 'paused' },
  now: string,
): Promise<string> {
  const automationId = newId.automation();
  await execute(ctx, actor, automationStream(actor.workspaceId, automationId), automationAggregate, (s) =>
    decideCreateAutomation(s, { automationId, ...input, now }),
  );
  return automationId;
}

/**
 * Edits, pauses or resumes. With If-Match, a stream revision other than the tag is 409
 * `version_conflict`, also when someone writes between our read and our append (execute decides again).
 */
export async function updateAutomation(
  ctx: CommandContext,
  actor: Actor,
  automationId: string,
  input: { ifMatch: number | null; patch: Partial<Definition>; status?: 'live' | 'paused' },
  now: string,
): Promise<void> {
  await execute(ctx, actor, automationStream(actor.workspaceId, automationId), automationAggregate, (s) =>
    decideUpdateAutomation(s, { ...input, now }),
  );
}

/** Returns once the enrolment process has ended the automation's runs, so no step of them runs after the answer. */
export async function deleteAutomation(
  ctx: CommandContext,
  actor: Actor,
  automationId: string,
  input: { ifMatch: number | null },
  now: string,
): Promise<void> {
  await execute(ctx, actor, automationStream(actor.workspaceId, automationId), automationAggregate, (s) =>
    decideDeleteAutomation(s, { ...input, now }),
  );
}
