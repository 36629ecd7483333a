import { findReturnPathMessage, recordReport, type ReturnPathTarget } from '../../commands/emails/reports.ts';
import type { CommandContext } from '../../commands/execute.ts';
import { domainOfReturnPath } from '../../domain/domains/records.ts';
import { idPatterns } from '../../domain/shared/ids.ts';
import type {
  DeliveryVerdict,
  InboundHandler,
  InboundMessage,
  RecipientPolicy,
  RecipientQuestion,
  RecipientVerdict,
} from '../../infra/inbound/port.ts';
import { readReport } from '../../infra/inbound/reports.ts';

/**
 * The return path of sent mail on the inbound listener: `<emailId>@bounces.<domain>`, where
 * DSNs (RFC 3464) and feedback reports (RFC 5965) about that message arrive. Offered two ways:
 * a route (`returnPathRoute`: claims its recipients, null for the rest) for a listener that
 * routes recipients to several slices, and the listener's policy/handler pair
 * (`returnPathPolicy`, `returnPathHandler`) for one that takes return paths only. Both are the
 * same code.
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

const NO_SUCH = { accept: false as const, code: 550, message: 'No such recipient here' };

export function returnPathRoute(ctx: CommandContext) {
  return {
    name: 'return path',
    /**
     * Null for an address that is no return path (another route's); for one, taken at RCPT only
     * when it names a live message of ours sent from that domain, else 550 (5.1.1).
     */
    async claim(_question: RecipientQuestion, address: string): Promise<RecipientVerdict<ReturnPathTarget> | null> {
      if (!isReturnPathAddress(address)) return null;
      const target = await findReturnPathMessage(ctx, address);
      return target ? { accept: true, recipient: target } : NO_SUCH;
    },
    /**
     * Reads the message as a report and records it against each recipient's message. Mail that
     * is not a report (an auto-reply, a person writing to the envelope sender, a bounce in no
     * standard format) is taken (250) and dropped: refusing it would only send a bounce of a
     * bounce. A failure to record throws, which the listener answers 451, so the sender offers the
     * report again; recording is idempotent.
     */
    async receive(
      message: InboundMessage<unknown>,
      recipients: { address: string; recipient: ReturnPathTarget }[],
    ): Promise<DeliveryVerdict> {
      const report = await readReport(await message.open());
      if (report !== null)
        for (const { recipient } of recipients)
          await recordReport(ctx, recipient, report, message.receivedAt.toISOString());
      return { accept: true };
    },
  };
}

export function returnPathPolicy(ctx: CommandContext): RecipientPolicy<ReturnPathTarget> {
  const route = returnPathRoute(ctx);
  return { accept: async (question) => (await route.claim(question, question.address)) ?? NO_SUCH };
}

export function returnPathHandler(ctx: CommandContext): InboundHandler<ReturnPathTarget> {
  const route = returnPathRoute(ctx);
  return { receive: (message) => route.receive(message, message.recipients) };
}
