import { z } from 'zod';
import { defineEvent, type EventOf } from '../shared/events.ts';

/**
 * A workspace's rules, one stream for all of them (`ws-<workspaceId>.rules`): the limit of 100 is
 * the workspace's, names are unique per mailbox and positions are decided over a mailbox's set,
 * so one decision must see them all. What a rule did to arriving mail is a run (`RuleRunRecorded`)
 * in a stream of its own: runs never contend with edits, and they outlive the rule.
 */

export const CONDITION_FIELDS = [
  'has_attachment',
  'spam',
  'bounced',
  'attachment_size',
  'message_size',
  'hour',
  'weekday',
  'envelope_from',
  'header',
] as const;
export type ConditionField = (typeof CONDITION_FIELDS)[number];
export const OPERATORS = ['equals', 'gt', 'lt', 'matches'] as const;
export type Operator = (typeof OPERATORS)[number];
export const ACTION_TYPES = ['label', 'remove_label', 'forward', 'reply', 'reject'] as const;

export const Condition = z.object({
  field: z.enum(CONDITION_FIELDS),
  op: z.enum(OPERATORS),
  value: z.string(),
  /** The header's name for a `header` condition; null for every other field. */
  header: z.string().nullable(),
  negate: z.boolean(),
});
export type Condition = z.infer<typeof Condition>;

export const Action = z.object({ type: z.enum(ACTION_TYPES), value: z.string().nullable() });
export type Action = z.infer<typeof Action>;

/** Everything of a rule a PATCH can change: it is merged, then checked whole (decide.ts `checkRule`). */
export const RuleDefinition = z.object({
  name: z.string(),
  description: z.string().nullable(),
  enabled: z.boolean(),
  match: z.enum(['all', 'any']),
  conditions: z.array(Condition),
  actions: z.array(Action),
  stopProcessing: z.boolean(),
  position: z.number().int(),
});
export type RuleDefinition = z.infer<typeof RuleDefinition>;

/** The mailbox a rule runs on: an address, or `*@<domain>` for a catch-all (no address id). */
export const RuleMailbox = z.object({
  address: z.string(),
  addressId: z.string().nullable(),
  domainId: z.string(),
});
export type RuleMailbox = z.infer<typeof RuleMailbox>;

export const RuleCreated = defineEvent(
  'RuleCreated',
  RuleDefinition.extend({ ruleId: z.string(), mailbox: RuleMailbox, createdAt: z.string() }),
);
export const RuleUpdated = defineEvent(
  'RuleUpdated',
  RuleDefinition.extend({ ruleId: z.string(), updatedAt: z.string() }),
);
export const RuleDeleted = defineEvent('RuleDeleted', z.object({ ruleId: z.string(), deletedAt: z.string() }));
/** Positions of one mailbox's rules become their index in `ruleIds`. */
export const RulesReordered = defineEvent(
  'RulesReordered',
  z.object({ mailbox: z.string(), ruleIds: z.array(z.string()), at: z.string() }),
);

/** What became of one action of a matched rule. */
export const ActionOutcome = z.object({
  type: z.enum(ACTION_TYPES),
  value: z.string().nullable(),
  /** `done`; `skipped` (the reason in `detail`); `failed` (a fault, in `detail`). */
  outcome: z.enum(['done', 'skipped', 'failed']),
  detail: z.string().nullable(),
});
export type ActionOutcome = z.infer<typeof ActionOutcome>;

/**
 * The rules that matched one arriving message in one mailbox, and what their actions did. Its
 * stream is the run's own (`ws-<workspaceId>.rule-run-<runId>`), so it survives the rule.
 */
export const RuleRunRecorded = defineEvent(
  'RuleRunRecorded',
  z.object({
    runId: z.string(),
    mailbox: z.string(),
    /** The filed message; null when a `reject` refused it at SMTP (nothing was filed). */
    threadId: z.string().nullable(),
    messageId: z.string().nullable(),
    headerMessageId: z.string().nullable(),
    mailFrom: z.string(),
    rejected: z.boolean(),
    matched: z.array(z.object({ ruleId: z.string(), name: z.string(), actions: z.array(ActionOutcome) })),
    at: z.string(),
  }),
);

/** An automatic reply went to `sender` from `mailbox`: the next is allowed 24 hours later. */
export const RuleReplyAllowed = defineEvent(
  'RuleReplyAllowed',
  z.object({ mailbox: z.string(), sender: z.string(), ruleId: z.string(), at: z.string() }),
);

export const ruleEvents = [RuleCreated, RuleUpdated, RuleDeleted, RulesReordered, RuleRunRecorded, RuleReplyAllowed];
export type RuleEvent =
  | EventOf<typeof RuleCreated>
  | EventOf<typeof RuleUpdated>
  | EventOf<typeof RuleDeleted>
  | EventOf<typeof RulesReordered>;
export type RuleRunEvent = EventOf<typeof RuleRunRecorded>;
export type RuleReplyEvent = EventOf<typeof RuleReplyAllowed>;
export type RuleRunData = RuleRunEvent['data'];

export const rulesStream = (workspaceId: string) => `ws-${workspaceId}.rules`;
export const ruleRunStream = (workspaceId: string, runId: string) => `ws-${workspaceId}.rule-run-${runId}`;
export const ruleReplyStream = (workspaceId: string, mailbox: string, sender: string) =>
  `ws-${workspaceId}.rule-reply-${mailbox}-${sender}`;
