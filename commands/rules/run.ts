import { DEFAULT_TIME_ZONE } from '../../domain/shared/time-zones.ts';
import { decideAllowReply, decideRecordRun } from '../../domain/rules/decide.ts';
import {
  type Evaluation,
  evaluateRules,
  type MessageFacts,
  noReplyReason,
  type RuleToEvaluate,
} from '../../domain/rules/evaluate.ts';
import { labelAfterRemoval } from '../../domain/rules/labels.ts';
import { isSettableLabel } from '../../domain/threads/events.ts';
import { updateThread } from '../threads/handlers.ts';
import {
  type Action,
  type ActionOutcome,
  ruleReplyStream,
  type RuleRunData,
  ruleRunStream,
} from '../../domain/rules/events.ts';
import { ruleReplyAggregate, ruleRunAggregate } from '../../domain/rules/state.ts';
import { DomainError } from '../../domain/shared/errors.ts';
import { decideMoveThread } from '../../domain/threads/decide.ts';
import type { Mailbox } from '../../domain/threads/events.ts';
import { threadStream } from '../../domain/threads/events.ts';
import { threadAggregate } from '../../domain/threads/state.ts';
import type { SendInput } from '../emails/handlers.ts';
import { type Actor, type CommandContext, execute } from '../execute.ts';
import { newId } from '../ids.ts';

/** What running a mailbox's rules reads and does besides the event store; system.ts builds it. */
export interface RuleRunPorts {
  commands: CommandContext;
  /** The enabled rules of a mailbox (the evaluator orders them). */
  rules(workspaceId: string, mailbox: string): Promise<RuleToEvaluate[]>;
  /** The mailbox's IANA time zone for `hour` and `weekday`. */
  timeZone(workspaceId: string, mailbox: string): Promise<string>;
  /** Whether the address has an enabled forward to `destination` that the destination confirmed. */
  confirmedForward(addressId: string, destination: string): Promise<boolean>;
  /** The stored raw message (forwards attach it whole). */
  raw(sha256: string): Promise<Buffer>;
  /**
   * Hands a message to the sending pipeline (commands/emails `sendEmail`) as the workspace's
   * system; `catchAll`: `from` may be an address of a domain whose catch-all is on (`Sender.catchAll`).
   */
  send(workspaceId: string, input: SendInput, now: Date, options?: { catchAll: boolean }): Promise<{ emailId: string }>;
}

/** One mailbox's rules over one arriving message. */
export async function evaluateMailbox(
  ports: RuleRunPorts,
  workspaceId: string,
  mailbox: string,
  facts: MessageFacts,
  now: string,
): Promise<Evaluation> {
  const rules = await ports.rules(workspaceId, mailbox);
  // Only an hour or weekday condition reads the clock; most arriving mail needs no zone looked up.
  const clocked = rules.some((r) => r.conditions.some((c) => c.field === 'hour' || c.field === 'weekday'));
  const timeZone = clocked ? await ports.timeZone(workspaceId, mailbox) : DEFAULT_TIME_ZONE;
  return evaluateRules(rules, facts, { now, timeZone });
}

/** The first matched `reject`, whose refusal answers DATA with 550. */
export function rejectionOf(evaluation: Evaluation): { ruleId: string; action: Action } | null {
  for (const m of evaluation.matched) {
    const action = m.actions.find((a) => a.type === 'reject');
    if (action) return { ruleId: m.ruleId, action };
  }
  return null;
}

const systemActor = (workspaceId: string): Actor => ({ workspaceId, kind: 'system', id: null });

async function record(ports: RuleRunPorts, workspaceId: string, run: Omit<RuleRunData, 'runId'>) {
  const runId = newId.ruleRun();
  await execute(ports.commands, systemActor(workspaceId), ruleRunStream(workspaceId, runId), ruleRunAggregate, (s) =>
    decideRecordRun(s, { ...run, runId }),
  );
}

/** A message refused by a `reject`: nothing was filed and no other action runs; the run is kept. */
export async function recordRejection(
  ports: RuleRunPorts,
  workspaceId: string,
  mailbox: string,
  evaluation: Evaluation,
  message: { headerMessageId: string | null; mailFrom: string },
  now: string,
) {
  if (evaluation.matched.length === 0) return;
  await record(ports, workspaceId, {
    mailbox,
    threadId: null,
    messageId: null,
    ...message,
    rejected: true,
    matched: evaluation.matched.map((m) => ({
      ruleId: m.ruleId,
      name: m.name,
      actions: m.actions.map((a) => ({
        ...a,
        outcome: a.type === 'reject' ? 'done' : 'skipped',
        detail: a.type === 'reject' ? null : 'the message was rejected',
      })),
    })),
    at: now,
  });
}

export interface FiledMessage {
  threadId: string;
  messageId: string;
  headerMessageId: string | null;
  subject: string;
  references: string[];
  mailFrom: string;
  /**
   * The first envelope recipient filed in the mailbox, as `recipientAddress` normalises it (lower
   * case, punycode, no `+tag`): the address the message was sent to, which a catch-all answers from.
   */
  recipient: string;
  rawSha256: string;
  facts: MessageFacts;
}

/**
 * Runs the matched rules' actions on a filed message, in order, and records the run. An action
 * that cannot be done is recorded as skipped or failed; it never refuses the message, which is
 * filed already.
 */
export async function applyRules(
  ports: RuleRunPorts,
  workspaceId: string,
  mailbox: Mailbox,
  evaluation: Evaluation,
  message: FiledMessage,
  now: string,
): Promise<void> {
  if (evaluation.matched.length === 0) return;
  const matched: RuleRunData['matched'] = [];
  for (const rule of evaluation.matched) {
    const actions: ActionOutcome[] = [];
    for (const action of rule.actions) {
      let outcome: Pick<ActionOutcome, 'outcome' | 'detail'>;
      try {
        outcome = await act(ports, workspaceId, mailbox, rule.ruleId, action, message, now);
      } catch (error) {
        const detail = error instanceof DomainError ? `${error.code}: ${error.message}` : String(error);
        outcome = { outcome: 'failed', detail: detail.slice(0, 500) };
      }
      actions.push({ ...action, ...outcome });
    }
    matched.push({ ruleId: rule.ruleId, name: rule.name, actions });
  }
  await record(ports, workspaceId, {
    mailbox: mailbox.address,
    threadId: message.threadId,
    messageId: message.messageId,
    headerMessageId: message.headerMessageId,
    mailFrom: message.mailFrom,
    rejected: false,
    matched,
    at: now,
  });
}

const done = { outcome: 'done', detail: null } as const;
const skipped = (detail: string) => ({ outcome: 'skipped', detail }) as const;

async function act(
  ports: RuleRunPorts,
  workspaceId: string,
  mailbox: Mailbox,
  ruleId: string,
  action: Action,
  message: FiledMessage,
  now: string,
): Promise<Pick<ActionOutcome, 'outcome' | 'detail'>> {
  const actor = systemActor(workspaceId);
  const value = action.value ?? '';
  switch (action.type) {
    case 'label':
    case 'remove_label': {
      if (!isSettableLabel(value)) {
        const thread = { id: message.threadId, addressId: mailbox.addressId, domainId: mailbox.domainId };
        const change = action.type === 'label' ? { add: [value], remove: [] } : { add: [], remove: [value] };
        const { events } = await updateThread(ports.commands, actor, thread, change, now);
        return events.length > 0 ? done : skipped('the thread carried the label so already');
      }
      const { events } = await execute(
        ports.commands,
        actor,
        threadStream(workspaceId, message.threadId),
        threadAggregate,
        (s) => {
          const to = action.type === 'label' ? value : labelAfterRemoval(s.label, value);
          return to === null ? [] : decideMoveThread(s, { threadId: message.threadId, label: to, now });
        },
      );
      return events.length > 0 ? done : skipped('the thread was filed so already');
    }
    case 'forward': {
      if (mailbox.addressId === null) return skipped('a catch-all has no address to forward from');
      if (!(await ports.confirmedForward(mailbox.addressId, value.toLowerCase())))
        return skipped('not a confirmed forward of the address');
      const raw = await ports.raw(message.rawSha256);
      await ports.send(
        workspaceId,
        {
          from: mailbox.address,
          to: value,
          subject: `Fwd: ${message.subject}`.slice(0, 998),
          text: `Forwarded by a rule of ${mailbox.address}: the message is attached as it arrived.\n`,
          attachments: [{ filename: 'message.eml', content: raw.toString('base64'), contentType: 'message/rfc822' }],
        },
        new Date(now),
      );
      return done;
    }
    case 'reply': {
      const reason = noReplyReason(message.facts);
      if (reason !== null) return skipped(reason);
      // RFC 3834 section 4: automatic responses go to the envelope sender.
      const sender = message.mailFrom.toLowerCase();
      const { events } = await execute(
        ports.commands,
        actor,
        ruleReplyStream(workspaceId, mailbox.address, sender),
        ruleReplyAggregate,
        (s) => decideAllowReply(s, { mailbox: mailbox.address, sender, ruleId, now }),
      );
      if (events.length === 0) return skipped('this sender got an automatic reply in the last 24 hours');
      const parent = message.headerMessageId;
      // A catch-all is no address to send from: it answers from the address the mail was sent to.
      const catchAll = mailbox.addressId === null;
      await ports.send(
        workspaceId,
        {
          from: catchAll ? message.recipient : mailbox.address,
          to: sender,
          template: { id: value, looseProps: true },
          headers: { 'Auto-Submitted': 'auto-replied' },
          ...(parent ? { inReplyTo: parent, references: message.references } : {}),
        },
        new Date(now),
        { catchAll },
      );
      return done;
    }
    case 'reject':
      return done;
  }
}
