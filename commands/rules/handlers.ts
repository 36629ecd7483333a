import { decideCreateRule, decideDeleteRule, decideReorderRules, decideUpdateRule } from '../../domain/rules/decide.ts';
import { type RuleDefinition, type RuleMailbox, rulesStream } from '../../domain/rules/events.ts';
import { rulesAggregate } from '../../domain/rules/state.ts';
import { type Actor, type CommandContext, execute } from '../execute.ts';
import { newId } from '../ids.ts';

const stream = (actor: Actor) => rulesStream(actor.workspaceId);

/** Appended at the end of the mailbox's rules; answers the new id. */
export async function createRule(
  ctx: CommandContext,
  actor: Actor,
  input: { mailbox: RuleMailbox; rule: Omit<RuleDefinition, 'position'> },
  now: string,
): Promise<{ ruleId: string }> {
  const ruleId = newId.rule();
  await execute(ctx, actor, stream(actor), rulesAggregate, (s) => decideCreateRule(s, { ruleId, ...input, now }));
  return { ruleId };
}

export async function updateRule(
  ctx: CommandContext,
  actor: Actor,
  ruleId: string,
  patch: Partial<RuleDefinition>,
  now: string,
): Promise<void> {
  await execute(ctx, actor, stream(actor), rulesAggregate, (s) => decideUpdateRule(s, { ruleId, patch, now }));
}

export async function deleteRule(ctx: CommandContext, actor: Actor, ruleId: string, now: string): Promise<void> {
  await execute(ctx, actor, stream(actor), rulesAggregate, (s) => decideDeleteRule(s, { ruleId, now }));
}

export async function reorderRules(
  ctx: CommandContext,
  actor: Actor,
  mailbox: string,
  ruleIds: string[],
  now: string,
): Promise<void> {
  await execute(ctx, actor, stream(actor), rulesAggregate, (s) => decideReorderRules(s, { mailbox, ruleIds, now }));
}
