import type { Readable } from 'node:stream';
import { findReturnPathMessage, recordReport, type ReturnPathTarget } from '../../commands/emails/reports.ts';
import type { CommandContext } from '../../commands/execute.ts';
import { domainOfReturnPath } from '../../domain/domains/records.ts';
import { idPatterns } from '../../domain/shared/ids.ts';
import type { InboundHandler, RecipientPolicy } from '../../infra/inbound/port.ts';
import { readReport } from '../../infra/inbound/reports.ts';

/**
 * The return path of sent mail on the inbound listener: `<emailId>@bounces.<domain>`, where
 * DSNs (RFC 3464) and feedback reports (RFC 5965) about that message arrive. The receiving
 * slice's policy hands these recipients here (`isReturnPathAddress`), everything else is
 * mailboxes.
 */

/** Whether an address has the shape of a return path (no lookup): which policy answers for it. */
export function isReturnPathAddress(address: string): boolean {
  const at = address.lastIndexOf('@');
  return (
    at > 0 &&
    idPatterns.email.test(address.slice(0, at).toLowerCase()) &&
    domainOfReturnPath(address.slice(at + 1)) !== null
  );
}

/** Taken at RCPT only for a live message of ours sent from that domain; anything else is 550 (5.1.1). */
export function returnPathPolicy(ctx: CommandContext): RecipientPolicy<ReturnPathTarget> {
  return {
    async accept(question) {
      const target = await findReturnPathMessage(ctx, question.address);
      return target
        ? { accept: true, recipient: target }
        : { accept: false, code: 550, message: 'No such recipient here' };
    },
  };
}

/**
 * Reads the message as a report and records it against each return-path recipient's message.
 * Mail that is not a report (an auto-reply, a person writing to the envelope sender, a bounce in
 * no standard format) is taken (250) and dropped: refusing it would only send a bounce of a
 * bounce. A failure to record answers 451 (the listener's answer to a throw), so the sender
 * offers the report again; recording is idempotent.
 */
export async function receiveReturnPathMail(
  ctx: CommandContext,
  open: () => Promise<Readable>,
  targets: ReturnPathTarget[],
  now: Date,
): Promise<void> {
  const report = await readReport(await open());
  if (report === null) return;
  for (const target of targets) await recordReport(ctx, target, report, now.toISOString());
}

export function returnPathHandler(ctx: CommandContext): InboundHandler<ReturnPathTarget> {
  return {
    async receive(message) {
      await receiveReturnPathMail(
        ctx,
        () => message.open(),
        message.recipients.map((r) => r.recipient),
        message.receivedAt,
      );
      return { accept: true };
    },
  };
}
