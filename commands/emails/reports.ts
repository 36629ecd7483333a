import { createHash } from 'node:crypto';
import { domainNameStream } from '../../domain/domain-names/events.ts';
import { domainNameAggregate } from '../../domain/domain-names/state.ts';
import { domainOfReturnPath } from '../../domain/domains/records.ts';
import { emailStream, type EmailEvent } from '../../domain/emails/events.ts';
import { decideDeliveryReport, decideFeedbackReport, emailReportAggregate } from '../../domain/emails/reports.ts';
import type { DeliveryReport, FeedbackReport } from '../../domain/messages/reports.ts';
import { idPatterns } from '../../domain/shared/ids.ts';
import { WrongExpectedRevision } from '../../infra/eventstore/port.ts';
import { addSuppression } from '../suppressions/handlers.ts';
import { appendDecided, loadState, type Actor, type CommandContext } from '../execute.ts';

/** A sent message a return-path address names. */
export interface ReturnPathTarget {
  workspaceId: string;
  emailId: string;
}

/**
 * The sent message `<emailId>@bounces.<domain>` names (the MAIL FROM of its delivery,
 * processes/emails/worker.ts), or null. Found from the event store alone: the domain name's
 * reservation says whose domain it is, and the message's stream must exist in that workspace,
 * be live (test-mode mail never leaves the machine) and have been sent from that domain. A domain
 * deleted since (its name released) takes its return path with it.
 */
export async function findReturnPathMessage(ctx: CommandContext, address: string): Promise<ReturnPathTarget | null> {
  const at = address.lastIndexOf('@');
  if (at <= 0) return null;
  const emailId = address.slice(0, at).toLowerCase();
  const domain = domainOfReturnPath(address.slice(at + 1));
  if (domain === null || !idPatterns.email.test(emailId)) return null;
  const { state: name } = await loadState(ctx, domainNameStream(domain), domainNameAggregate);
  const holder = name.holder;
  if (holder?.use !== 'domain') return null;
  const { state } = await loadState(ctx, emailStream(holder.workspaceId, emailId), emailReportAggregate);
  const accepted = state.accepted;
  if (accepted?.mode !== 'live' || accepted.from.domainId !== holder.domainId) return null;
  return { workspaceId: holder.workspaceId, emailId };
}

/** The same report parsed again gives the same id: what makes a repeated delay report change nothing. */
export const reportIdOf = (report: DeliveryReport | FeedbackReport) =>
  createHash('sha256').update(JSON.stringify(report)).digest('hex').slice(0, 32);

const MAX_ATTEMPTS = 20;

/**
 * Records what a report says about the message it came back for (domain/emails/reports.ts): an
 * asynchronous hard bounce, an expiry past our hand-over, a delay, a complaint. A hard bounce's
 * address gets a `bounce` suppression (not removable), a complainer's a `complaint` one
 * (removable), each before its event is appended: a failure in between leaves the event unwritten,
 * and the report offered again (the sender retries after our 451) decides it again. The events are
 * appended with the revision read, so two copies of one report racing each other record it once.
 * Answers the events written: none for a report that tells nothing new or is not about this message.
 */
export async function recordReport(
  ctx: CommandContext,
  target: ReturnPathTarget,
  report: DeliveryReport | FeedbackReport,
  now: string,
): Promise<EmailEvent[]> {
  const actor: Actor = { workspaceId: target.workspaceId, kind: 'system', id: null };
  const stream = emailStream(target.workspaceId, target.emailId);
  const reportId = reportIdOf(report);
  for (let attempt = 1; ; attempt++) {
    const { state, revision } = await loadState(ctx, stream, emailReportAggregate);
    const events =
      report.kind === 'delivery-status'
        ? decideDeliveryReport(state, { report, reportId, now })
        : decideFeedbackReport(state, { report, now });
    if (events.length === 0) return [];
    for (const e of events) {
      if (e.type === 'EmailRecipientBounced' && e.data.bounce === 'hard')
        await addSuppression(
          ctx,
          actor,
          { email: e.data.recipient, reason: 'bounce', detail: e.data.response.slice(0, 500) },
          now,
        );
      else if (e.type === 'EmailRecipientComplained')
        await addSuppression(
          ctx,
          actor,
          {
            email: e.data.recipient,
            reason: 'complaint',
            detail: `Feedback report (${e.data.feedbackType}) about ${e.data.emailId}.`,
          },
          now,
        );
    }
    try {
      await appendDecided(ctx, actor, stream, events, revision);
      return events;
    } catch (error) {
      if (!(error instanceof WrongExpectedRevision) || attempt >= MAX_ATTEMPTS) throw error;
    }
  }
}
