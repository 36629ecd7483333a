import type { MessageSummary } from '../messages/summary.ts';
import type { Action, Condition, RuleDefinition } from './events.ts';

/**
 * The rules' evaluator, pure: a message's facts, the mailbox's rules and the moment (with the
 * mailbox's time zone) give the rules that matched, in order, and their actions. Receiving runs
 * it on every arriving message; the dry run shows its answer.
 */

/** What conditions look at, taken from the envelope and the parsed summary. */
export interface MessageFacts {
  /** MAIL FROM; empty for the null sender. */
  mailFrom: string;
  /** The From header's address, lower-case, or null. */
  from: string | null;
  /** Bytes of the raw message as stored. */
  size: number;
  spam: boolean;
  headers: { name: string; value: string }[];
  /** Attachments offered as files (not inline images), decoded bytes each. */
  attachments: number[];
}

export function factsOf(summary: MessageSummary, envelope: { mailFrom: string; spam: boolean }): MessageFacts {
  return {
    mailFrom: envelope.mailFrom,
    from: summary.from?.address.toLowerCase() ?? null,
    size: summary.size,
    spam: envelope.spam,
    headers: summary.headers,
    attachments: summary.attachments.filter((a) => !a.inline).map((a) => a.size),
  };
}

const headerValues = (facts: MessageFacts, name: string) =>
  facts.headers.filter((h) => h.name.toLowerCase() === name.toLowerCase()).map((h) => h.value.trim());

/**
 * A bounce: the null sender (RFC 5321 4.5.5), mail from a MAILER-DAEMON, or a delivery report
 * (RFC 3464 `multipart/report; report-type=delivery-status`).
 */
export function isBounce(facts: MessageFacts): boolean {
  if (facts.mailFrom === '' || facts.mailFrom === '<>') return true;
  const local = (address: string | null) => address?.slice(0, address.lastIndexOf('@')).toLowerCase();
  if (local(facts.mailFrom) === 'mailer-daemon' || local(facts.from) === 'mailer-daemon') return true;
  return headerValues(facts, 'content-type').some(
    (v) => /^multipart\/report\b/i.test(v) && /report-type\s*=\s*"?(delivery-status|global-delivery-status)/i.test(v),
  );
}

/**
 * Why a message gets no automatic reply, or null when it may get one: bounces, auto-responders
 * (`Auto-Submitted` other than `no`, RFC 3834; `Precedence` bulk, junk, list or auto_reply) and
 * mailing lists (`List-Id`, RFC 2919) never do.
 */
export function noReplyReason(facts: MessageFacts): string | null {
  if (isBounce(facts)) return 'the message is a bounce';
  if (headerValues(facts, 'auto-submitted').some((v) => v.toLowerCase().split(/[;\s]/)[0] !== 'no'))
    return 'the message was sent automatically (Auto-Submitted)';
  if (headerValues(facts, 'precedence').some((v) => /^(bulk|junk|list|auto_reply)$/i.test(v)))
    return 'the message was sent automatically (Precedence)';
  if (headerValues(facts, 'list-id').length > 0) return 'the message came through a mailing list (List-Id)';
  return null;
}

const ALNUM = /[\p{L}\p{N}]/gu;

/** A `matches` pattern says something: at least two letters or digits beside its wildcards. */
export const globIsSpecific = (pattern: string) => (pattern.match(ALNUM)?.length ?? 0) >= 2;

/** Whole-value glob: `*` any run of characters, `?` one; everything else literal, case ignored. */
export function globMatches(pattern: string, value: string): boolean {
  const source = [...pattern]
    .map((ch) => (ch === '*' ? '.*' : ch === '?' ? '.' : ch.replace(/[\\^$.|+()[\]{}]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`, 'isu').test(value);
}

/** The hour (0 to 23) and weekday (0 = Sunday) of an instant in an IANA time zone. */
// Making a DateTimeFormat costs far more than using one, and every arriving message is evaluated.
const formats = new Map<string, Intl.DateTimeFormat>();
const formatIn = (timeZone: string) => {
  let format = formats.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', hour: 'numeric', weekday: 'short' });
    formats.set(timeZone, format);
  }
  return format;
};

export function clockIn(now: string, timeZone: string): { hour: number; weekday: number } {
  const parts = formatIn(timeZone)
    .formatToParts(new Date(now))
    .reduce<Record<string, string>>((acc, p) => Object.assign(acc, { [p.type]: p.value }), {});
  return {
    hour: Number(parts.hour),
    weekday: ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'].indexOf(parts.weekday ?? ''),
  };
}

function compareNumber(op: Condition['op'], actual: number, expected: number): boolean {
  return op === 'gt' ? actual > expected : op === 'lt' ? actual < expected : actual === expected;
}

function compareText(op: Condition['op'], actual: string, expected: string): boolean {
  return op === 'matches' ? globMatches(expected, actual) : actual.toLowerCase() === expected.toLowerCase();
}

/** One condition, before `negate`. A header the message lacks matches nothing. */
function holds(c: Condition, facts: MessageFacts, clock: () => { hour: number; weekday: number }): boolean {
  switch (c.field) {
    case 'has_attachment':
      return facts.attachments.length > 0 === (c.value === 'true');
    case 'spam':
      return facts.spam === (c.value === 'true');
    case 'bounced':
      return isBounce(facts) === (c.value === 'true');
    case 'attachment_size':
      return compareNumber(
        c.op,
        facts.attachments.reduce((a, b) => a + b, 0),
        Number(c.value),
      );
    case 'message_size':
      return compareNumber(c.op, facts.size, Number(c.value));
    case 'hour':
      return compareNumber(c.op, clock().hour, Number(c.value));
    case 'weekday':
      return compareNumber(c.op, clock().weekday, Number(c.value));
    case 'envelope_from':
      return compareText(c.op, facts.mailFrom, c.value);
    case 'header':
      return headerValues(facts, c.header ?? '').some((v) => compareText(c.op, v, c.value));
  }
}

export interface RuleToEvaluate extends RuleDefinition {
  ruleId: string;
  createdAt: string;
}

export interface RuleResult {
  ruleId: string;
  name: string;
  matched: boolean;
  /** Each condition's outcome after `negate`, in order. */
  conditions: boolean[];
}

export interface Evaluation {
  /** Every enabled rule looked at, in order, until one that matched stopped processing. */
  results: RuleResult[];
  matched: { ruleId: string; name: string; actions: Action[] }[];
  /** The rule whose `stopProcessing` ended the run, or null. */
  stoppedBy: string | null;
}

/** Position, then createdAt, then id: the list's order is the order rules run in. */
export const byPosition = (a: RuleToEvaluate, b: RuleToEvaluate) =>
  a.position - b.position || a.createdAt.localeCompare(b.createdAt) || a.ruleId.localeCompare(b.ruleId);

export function evaluateRules(
  rules: RuleToEvaluate[],
  facts: MessageFacts,
  at: { now: string; timeZone: string },
): Evaluation {
  // Only rules on the hour or weekday need the clock; most mail meets none.
  let known: { hour: number; weekday: number } | undefined;
  const clock = () => (known ??= clockIn(at.now, at.timeZone));
  const evaluation: Evaluation = { results: [], matched: [], stoppedBy: null };
  for (const rule of [...rules].filter((r) => r.enabled).sort(byPosition)) {
    const conditions = rule.conditions.map((c) => holds(c, facts, clock) !== c.negate);
    const matched = rule.match === 'all' ? conditions.every(Boolean) : conditions.some(Boolean);
    evaluation.results.push({ ruleId: rule.ruleId, name: rule.name, matched, conditions });
    if (!matched) continue;
    evaluation.matched.push({ ruleId: rule.ruleId, name: rule.name, actions: rule.actions });
    if (rule.stopProcessing) {
      evaluation.stoppedBy = rule.ruleId;
      break;
    }
  }
  return evaluation;
}
