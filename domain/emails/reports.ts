import type { DeliveryReport, DeliveryStatusRecipient, FeedbackReport, OriginalMessage } from '../messages/reports.ts';
import type { EmailEvent, SendingStream } from './events.ts';

/**
 * Reports that come back to a message's return path (RFC 3464 DSNs, RFC 5965 feedback reports),
 * decided against the message's own stream. The return path names the message; the report is
 * only believed about that message and the recipients it was sent to, so a report about
 * anything else decides nothing.
 */

/** A recipient as reports see it. */
export interface ReportedRecipient {
  /** The address as the message was sent to it. */
  email: string;
  /** The attempt that delivered it (the recipient's server took the message); null until then. */
  delivered: number | null;
  bounced: boolean;
  complained: boolean;
  /** The delay reports already recorded (their `reportId`s). */
  delays: string[];
}

export interface EmailReportState {
  accepted: {
    emailId: string;
    messageId: string;
    from: { addressId: string; domainId: string; email: string };
    stream: SendingStream;
    mode: 'live' | 'test';
  } | null;
  /** The queued recipients, by lower-cased address. */
  recipients: Record<string, ReportedRecipient>;
}

/** Delay reports kept per recipient: a sender of endless distinct reports cannot grow the stream. */
export const MAX_DELAY_REPORTS = 10;
/** The remote server's words are kept to this many characters. */
const MAX_RESPONSE = 1000;

const update = (s: EmailReportState, email: string, change: (r: ReportedRecipient) => ReportedRecipient) => {
  const key = email.toLowerCase();
  const current = s.recipients[key];
  return current ? { ...s, recipients: { ...s.recipients, [key]: change(current) } } : s;
};

export const emailReportAggregate = {
  initialState: { accepted: null, recipients: {} } as EmailReportState,
  evolve(state: EmailReportState, event: EmailEvent): EmailReportState {
    switch (event.type) {
      case 'EmailAccepted': {
        const d = event.data;
        const recipients: Record<string, ReportedRecipient> = {};
        for (const r of d.recipients)
          if (r.status === 'queued')
            recipients[r.email.toLowerCase()] = {
              email: r.email,
              delivered: null,
              bounced: false,
              complained: false,
              delays: [],
            };
        const { addressId, domainId, email } = d.from;
        return {
          accepted: {
            emailId: d.emailId,
            messageId: d.messageId,
            from: { addressId, domainId, email },
            stream: d.stream,
            mode: d.mode,
          },
          recipients,
        };
      }
      case 'EmailRecipientDelivered':
        return update(state, event.data.recipient, (r) => ({ ...r, delivered: event.data.attempt }));
      case 'EmailRecipientBounced':
        return update(state, event.data.recipient, (r) => ({ ...r, bounced: true }));
      case 'EmailRecipientComplained':
        return update(state, event.data.recipient, (r) => ({ ...r, complained: true }));
      case 'EmailRecipientDelayReported':
        return update(state, event.data.recipient, (r) => ({ ...r, delays: [...r.delays, event.data.reportId] }));
      default:
        return state;
    }
  },
};

/**
 * Whether the returned original is this message: its Message-ID must be ours when the reporter
 * returned one. A report without the original's headers is believed on the return path alone
 * (RFC 3464 makes the returned content optional).
 */
export function reportConcerns(state: EmailReportState, original: OriginalMessage): boolean {
  return state.accepted !== null && (original.messageId === null || original.messageId === state.accepted.messageId);
}

/** The recipient of ours a DSN's block names: its Original-Recipient (what we sent to), else its Final-Recipient. */
function matchRecipient(state: EmailReportState, r: DeliveryStatusRecipient): string | null {
  for (const address of [r.originalRecipient, r.finalRecipient])
    if (address !== null && state.recipients[address.toLowerCase()]) return address.toLowerCase();
  return null;
}

/**
 * A DSN about the message: a recipient its server took (delivered) that a later hop failed
 * permanently bounces `hard` (source `dsn`); one that failed with a transient status (a hop gave
 * up on retrying, 4.4.7) bounces `expired`; a delay (`delayed`, or a transient status without an
 * action) is recorded as a report, at most `MAX_DELAY_REPORTS` per recipient. A recipient not
 * delivered yet cannot have bounced past our hand-over, a bounced one stays as it is, and success
 * notices (we ask for none) decide nothing.
 */
export function decideDeliveryReport(
  state: EmailReportState,
  cmd: { report: DeliveryReport; reportId: string; now: string },
): EmailEvent[] {
  const accepted = state.accepted;
  if (!accepted || !reportConcerns(state, cmd.report.original)) return [];
  const { emailId, messageId, from, stream } = accepted;
  const events: EmailEvent[] = [];
  const seen = new Set<string>();
  for (const r of cmd.report.recipients) {
    const key = matchRecipient(state, r);
    // A report naming one recipient twice is read once: its first block.
    if (key === null || seen.has(key)) continue;
    seen.add(key);
    const standing = state.recipients[key]!;
    if (standing.delivered === null || standing.bounced) continue;
    const recipient = standing.email;
    const failed = r.action === 'failed' || (r.action === null && r.statusClass === 'permanent');
    const delayed = r.action === 'delayed' || (r.action === null && r.statusClass === 'transient');
    if (failed) {
      const code = /^([245]\d\d)\b/.exec(r.diagnostic ?? '')?.[1];
      events.push({
        type: 'EmailRecipientBounced',
        data: {
          emailId,
          messageId,
          from,
          stream,
          recipient,
          attempt: standing.delivered,
          code: code === undefined ? null : Number(code),
          enhancedCode: r.status,
          response: (r.diagnostic ?? `The delivery failed${r.status ? ` (${r.status})` : ''}.`).slice(0, MAX_RESPONSE),
          mx: r.remoteMta,
          tls: null,
          at: cmd.now,
          bounce: r.statusClass === 'transient' ? 'expired' : 'hard',
          source: 'dsn',
        },
      });
    } else if (delayed && !standing.delays.includes(cmd.reportId) && standing.delays.length < MAX_DELAY_REPORTS) {
      events.push({
        type: 'EmailRecipientDelayReported',
        data: {
          emailId,
          messageId,
          from,
          stream,
          recipient,
          reportId: cmd.reportId,
          status: r.status,
          diagnostic: r.diagnostic?.slice(0, MAX_RESPONSE) ?? null,
          reportingMta: cmd.report.reportingMta,
          willRetryUntil: r.willRetryUntil,
          at: cmd.now,
        },
      });
    }
  }
  return events;
}

/**
 * A feedback report about the message: an `abuse` or `fraud` report is a complaint by each
 * recipient it names (Original-Rcpt-To, else the returned To) that the message was delivered to,
 * once. Providers often redact the recipient: when it names none of ours and the message was
 * delivered to exactly one recipient, the complaint is that one's. Other feedback types (`not-spam`,
 * `auth-failure`, `virus`, `other`) decide nothing.
 */
export function decideFeedbackReport(
  state: EmailReportState,
  cmd: { report: FeedbackReport; now: string },
): EmailEvent[] {
  const accepted = state.accepted;
  if (!accepted || !cmd.report.complaint || !reportConcerns(state, cmd.report.original)) return [];
  const delivered = Object.keys(state.recipients).filter((key) => state.recipients[key]!.delivered !== null);
  const named = [...new Set(cmd.report.recipients.map((a) => a.toLowerCase()))].filter((key) => state.recipients[key]);
  const targets = named.length > 0 ? named : delivered.length === 1 ? delivered : [];
  const { emailId, messageId, from, stream } = accepted;
  return targets
    .filter((key) => state.recipients[key]!.delivered !== null && !state.recipients[key]!.complained)
    .map((key) => ({
      type: 'EmailRecipientComplained',
      data: {
        emailId,
        messageId,
        from,
        stream,
        recipient: state.recipients[key]!.email,
        feedbackType: cmd.report.feedbackType,
        at: cmd.now,
      },
    }));
}
