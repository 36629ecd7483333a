import { domainOf } from '../shared/allowlists.ts';
import { EXPIRED_ENHANCED_CODE, nextRetry, type RetrySchedule } from '../sending/retry.ts';
import type { RecipientStatus } from '../sending/smtp-reply.ts';
import type { EmailEvent } from './events.ts';

type Accepted = Extract<EmailEvent, { type: 'EmailAccepted' }>['data'];

/** A recipient as delivery sees it: how many attempts it had, and whether it is settled (delivered or bounced). */
export interface RecipientProgress {
  attempts: number;
  settled: boolean;
}

/**
 * A message's stream as the delivery process manager folds it: what was accepted, whether it was
 * cancelled or taken in hand, and each queued recipient's attempts. The read side's view of a
 * message (GET /emails/{id}) is another fold of the same stream.
 */
export interface EmailDeliveryState {
  accepted: Accepted | null;
  cancelled: boolean;
  started: boolean;
  recipients: Record<string, RecipientProgress>;
}

export const initialEmailDeliveryState: EmailDeliveryState = {
  accepted: null,
  cancelled: false,
  started: false,
  recipients: {},
};

const attempted = (s: EmailDeliveryState, recipient: string, settled: boolean): EmailDeliveryState => {
  const current = s.recipients[recipient];
  if (!current) return s;
  return { ...s, recipients: { ...s.recipients, [recipient]: { attempts: current.attempts + 1, settled } } };
};

export const emailDeliveryAggregate = {
  initialState: initialEmailDeliveryState,
  evolve(state: EmailDeliveryState, event: EmailEvent): EmailDeliveryState {
    switch (event.type) {
      case 'EmailAccepted': {
        const recipients: Record<string, RecipientProgress> = {};
        for (const r of event.data.recipients)
          if (r.status === 'queued') recipients[r.email] = { attempts: 0, settled: false };
        return { ...state, accepted: event.data, recipients };
      }
      case 'EmailCancelled':
        return { ...state, cancelled: true };
      case 'EmailSendingStarted':
        return { ...state, started: true };
      case 'EmailRecipientDelivered':
      case 'EmailRecipientBounced':
        return attempted(state, event.data.recipient, true);
      case 'EmailRecipientDeferred':
        return attempted(state, event.data.recipient, false);
      case 'EmailRecipientComplained':
      case 'EmailRecipientDelayReported':
      case 'EmailOpened':
      case 'EmailLinkClicked':
        return state;
    }
  },
};

/** The distinct recipient domains of a message's queued recipients: direct delivery's unit of work. */
export function recipientDomains(accepted: Pick<Accepted, 'recipients'>): string[] {
  return [...new Set(accepted.recipients.filter((r) => r.status === 'queued').map((r) => domainOf(r.email)))];
}

/** The queued recipients on `domain` that still wait for an answer. */
export function openRecipients(s: EmailDeliveryState, domain: string): string[] {
  return Object.entries(s.recipients)
    .filter(([email, r]) => !r.settled && domainOf(email) === domain)
    .map(([email]) => email);
}

/**
 * The process manager takes the message in hand, unless it was cancelled (then nothing goes out)
 * or another attempt did already. Appended with the revision the state was read at, so a cancel
 * in between makes the append fail and the decision is made again on the cancelled state.
 */
export function decideStartSending(s: EmailDeliveryState, cmd: { now: string }): EmailEvent[] {
  if (!s.accepted || s.cancelled || s.started) return [];
  const { emailId, messageId, from } = s.accepted;
  return [
    {
      type: 'EmailSendingStarted',
      data: {
        emailId,
        startedAt: cmd.now,
        messageId,
        from: { addressId: from.addressId, domainId: from.domainId, email: from.email },
      },
    },
  ];
}

/** One recipient's answer on one attempt, as the delivery port gives it (infra/outbound/delivery.ts). */
export interface AttemptAnswer {
  recipient: string;
  status: RecipientStatus;
  code: number | null;
  enhancedCode: string | null;
  response: string;
  mx: string | null;
  tls: boolean | null;
}

/**
 * The events of one attempt's answers: delivered; bounced `hard` on a permanent refusal; deferred
 * to the retry schedule's next time, or bounced `expired` when the lifetime is used up. The
 * lifetime counts from the scheduled time when there is one (a message scheduled for next week is
 * not late at acceptance). Answers for recipients settled already (a repeated job) are dropped.
 */
export function decideAttemptOutcomes(
  s: EmailDeliveryState,
  cmd: { answers: AttemptAnswer[]; now: string; schedule?: RetrySchedule },
): EmailEvent[] {
  const accepted = s.accepted;
  if (!accepted) return [];
  const events: EmailEvent[] = [];
  const { emailId, messageId, from, stream } = accepted;
  const sender = { addressId: from.addressId, domainId: from.domainId, email: from.email };
  for (const a of cmd.answers) {
    const progress = s.recipients[a.recipient];
    if (!progress || progress.settled) continue;
    const base = {
      emailId,
      messageId,
      from: sender,
      stream,
      recipient: a.recipient,
      attempt: progress.attempts + 1,
      code: a.code,
      enhancedCode: a.enhancedCode,
      response: a.response,
      mx: a.mx,
      tls: a.tls,
      at: cmd.now,
    };
    if (a.status === 'delivered') {
      events.push({ type: 'EmailRecipientDelivered', data: base });
      continue;
    }
    if (a.status === 'bounced') {
      events.push({ type: 'EmailRecipientBounced', data: { ...base, bounce: 'hard' } });
      continue;
    }
    const next = nextRetry(
      { acceptedAt: accepted.scheduledAt ?? accepted.acceptedAt, failedAttempts: base.attempt, failedAt: cmd.now },
      cmd.schedule,
    );
    events.push(
      next.kind === 'retry'
        ? { type: 'EmailRecipientDeferred', data: { ...base, nextAttemptAt: next.at } }
        : {
            type: 'EmailRecipientBounced',
            data: { ...base, enhancedCode: EXPIRED_ENHANCED_CODE, bounce: 'expired' },
          },
    );
  }
  return events;
}
