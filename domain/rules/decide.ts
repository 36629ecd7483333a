import { fail } from '../shared/errors.ts';
import type {
  Condition,
  ConditionField,
  RuleDefinition,
  RuleEvent,
  RuleMailbox,
  RuleReplyEvent,
  RuleRunData,
  RuleRunEvent,
} from './events.ts';
import { globIsSpecific } from './evaluate.ts';
import type { RulesState } from './state.ts';

/** The spec's soft limit, for the whole workspace (422 `workspace_limit_reached`). */
export const RULES_MAX = 100;
export const RULE_NAME_MAX = 100;
export const RULE_DESCRIPTION_MAX = 500;
export const CONDITIONS_MAX = 20;
export const ACTIONS_MAX = 10;
export const CONDITION_VALUE_MAX = 512;
export const ACTION_VALUE_MAX = 320;
export const HEADER_NAME_MAX = 128;
export const POSITION_MAX = 1_000_000;
export const REORDER_MAX = 100;
/** At most one automatic reply per sender and mailbox in this window. */
export const REPLY_WINDOW_MS = 24 * 60 * 60 * 1000;

const BOOLEAN_FIELDS: ReadonlySet<ConditionField> = new Set(['has_attachment', 'spam', 'bounced']);
const NUMBER_FIELDS: ReadonlyMap<ConditionField, number> = new Map([
  ['attachment_size', Number.MAX_SAFE_INTEGER],
  ['message_size', Number.MAX_SAFE_INTEGER],
  ['hour', 23],
  ['weekday', 6],
]);

export const isBooleanField = (field: ConditionField) => BOOLEAN_FIELDS.has(field);

function checkCondition(c: Condition, at: string): void {
  if (c.field === 'header') {
    if (c.header === null || c.header.trim() === '')
      fail('invalid_parameter', 'A header condition names its header.', `${at}.header`);
  } else if (c.header !== null) fail('invalid_parameter', `\`header\` is only for a header condition.`, `${at}.header`);
  if (isBooleanField(c.field)) {
    if (c.op !== 'equals' || (c.value !== 'true' && c.value !== 'false'))
      fail(
        'invalid_parameter',
        `\`${c.field}\` takes only \`equals\` with 'true' or 'false'.`,
        `${at}.${c.op !== 'equals' ? 'op' : 'value'}`,
      );
    return;
  }
  const max = NUMBER_FIELDS.get(c.field);
  if (max !== undefined) {
    if (c.op === 'matches') fail('invalid_parameter', `\`${c.field}\` is a number: use equals, gt or lt.`, `${at}.op`);
    if (!/^\d{1,16}$/.test(c.value) || Number(c.value) > max)
      fail('invalid_parameter', `\`${c.field}\` compares with a whole number from 0 to ${max}.`, `${at}.value`);
    return;
  }
  if (c.op === 'gt' || c.op === 'lt')
    fail('invalid_parameter', `\`${c.field}\` is text: use equals or matches.`, `${at}.op`);
  if (c.op === 'matches' && !globIsSpecific(c.value))
    fail('invalid_parameter', 'A `matches` pattern needs at least two letters or digits.', `${at}.value`);
}

/**
 * A rule as a whole (create, and a PATCH once merged): what zod cannot see field by field. The
 * values that name other things (labels, templates, forwards) are checked by the command, which
 * can read them.
 */
export function checkRule(rule: RuleDefinition): void {
  for (const [i, c] of rule.conditions.entries()) checkCondition(c, `conditions.${i}`);
  for (const [i, a] of rule.actions.entries())
    if (a.type !== 'reject' && (a.value === null || a.value.trim() === ''))
      fail('invalid_parameter', `A \`${a.type}\` action needs a value.`, `actions.${i}.value`);
  const reject = rule.actions.findIndex((a) => a.type === 'reject');
  if (reject >= 0 && !rule.conditions.some((c) => c.field === 'envelope_from'))
    fail(
      'reject_needs_envelope',
      'A rule that rejects mail must also test `envelope_from`, so a refusal names who sent it.',
      `actions.${reject}.type`,
    );
}

const sameName = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

function checkNameFree(state: RulesState, mailbox: string, name: string, except: string | null) {
  for (const rule of state.rules.values())
    if (rule.mailbox.address === mailbox && rule.ruleId !== except && sameName(rule.name, name))
      fail('rule_name_taken', `A rule named \`${name}\` exists on ${mailbox}.`, 'name');
}

export interface CreateRule {
  ruleId: string;
  mailbox: RuleMailbox;
  rule: Omit<RuleDefinition, 'position'>;
  now: string;
}

/** Appended at the end of its mailbox's rules: one past the last position (at most `POSITION_MAX`). */
export function decideCreateRule(state: RulesState, cmd: CreateRule): RuleEvent[] {
  if (state.rules.size >= RULES_MAX)
    fail('workspace_limit_reached', `A workspace has at most ${RULES_MAX} rules.`, null);
  checkNameFree(state, cmd.mailbox.address, cmd.rule.name, null);
  const positions = [...state.rules.values()]
    .filter((r) => r.mailbox.address === cmd.mailbox.address)
    .map((r) => r.position);
  const position = positions.length === 0 ? 0 : Math.min(Math.max(...positions) + 1, POSITION_MAX);
  const definition = { ...cmd.rule, position };
  checkRule(definition);
  return [
    { type: 'RuleCreated', data: { ...definition, ruleId: cmd.ruleId, mailbox: cmd.mailbox, createdAt: cmd.now } },
  ];
}

const ruleOf = (state: RulesState, ruleId: string) =>
  state.rules.get(ruleId) ?? fail('resource_not_found', 'No such rule.', 'id');

/** A PATCH: merged with the stored rule, then checked whole; nothing changed decides nothing. */
export function decideUpdateRule(
  state: RulesState,
  cmd: { ruleId: string; patch: Partial<RuleDefinition>; now: string },
): RuleEvent[] {
  const current = ruleOf(state, cmd.ruleId);
  const { ruleId: _, mailbox, createdAt: __, ...stored } = current;
  const merged: RuleDefinition = { ...stored, ...cmd.patch };
  checkRule(merged);
  if (!sameName(merged.name, stored.name)) checkNameFree(state, mailbox.address, merged.name, cmd.ruleId);
  if (JSON.stringify(merged) === JSON.stringify(stored)) return [];
  return [{ type: 'RuleUpdated', data: { ...merged, ruleId: cmd.ruleId, updatedAt: cmd.now } }];
}

export function decideDeleteRule(state: RulesState, cmd: { ruleId: string; now: string }): RuleEvent[] {
  ruleOf(state, cmd.ruleId);
  return [{ type: 'RuleDeleted', data: { ruleId: cmd.ruleId, deletedAt: cmd.now } }];
}

/** Every rule of the mailbox exactly once, else 422 `incomplete_order`; positions become the index. */
export function decideReorderRules(
  state: RulesState,
  cmd: { mailbox: string; ruleIds: string[]; now: string },
): RuleEvent[] {
  const mine = new Set([...state.rules.values()].filter((r) => r.mailbox.address === cmd.mailbox).map((r) => r.ruleId));
  const given = new Set(cmd.ruleIds);
  if (given.size !== cmd.ruleIds.length || given.size !== mine.size || [...given].some((id) => !mine.has(id)))
    fail(
      'incomplete_order',
      `\`ruleIds\` must name every rule of ${cmd.mailbox} exactly once (${mine.size} rules).`,
      'ruleIds',
    );
  return [{ type: 'RulesReordered', data: { mailbox: cmd.mailbox, ruleIds: cmd.ruleIds, at: cmd.now } }];
}

/** A run is recorded once under its id. */
export function decideRecordRun(state: { recorded: boolean }, run: RuleRunData): RuleRunEvent[] {
  return state.recorded ? [] : [{ type: 'RuleRunRecorded', data: run }];
}

/** An automatic reply to a sender from a mailbox, unless one went in the last 24 hours (then nothing). */
export function decideAllowReply(
  state: { lastAt: string | null },
  cmd: { mailbox: string; sender: string; ruleId: string; now: string },
): RuleReplyEvent[] {
  if (state.lastAt !== null && Date.parse(cmd.now) - Date.parse(state.lastAt) < REPLY_WINDOW_MS) return [];
  const { now, ...reply } = cmd;
  return [{ type: 'RuleReplyAllowed', data: { ...reply, at: now } }];
}
