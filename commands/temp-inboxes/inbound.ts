import type { Readable } from 'node:stream';
import type { MessageSummary } from '../../domain/messages/summary.ts';
import { DomainError } from '../../domain/shared/errors.ts';
import type { CommandContext } from '../execute.ts';
import type { InboundRoute } from '../threads/inbound.ts';
import { liveTempInbox, receiveTempMail, tempInboxIdOf } from './handlers.ts';

export interface TempInboxRoutePorts {
  commands: CommandContext;
  /** `TEMP_MAIL_DOMAIN`, lower case. */
  domain: string;
  /** The summary (infra/inbound/summary.ts), attachments into the blob store. */
  parse(raw: Readable, size: number): Promise<{ summary: MessageSummary }>;
}

/**
 * Mail for the disposable domain: every recipient there is this route's, taken only for a live
 * inbox (else 550 at RCPT), and kept in the inbox's stream. No rules, threads or authentication:
 * nobody owns the inbox, and what arrives is only ever read back.
 */
export function tempInboxRoute(ports: TempInboxRoutePorts): InboundRoute<string> {
  return {
    name: 'temp-inbox',
    async claim(_question, address) {
      const at = address.lastIndexOf('@');
      if (address.slice(at + 1) !== ports.domain) return null;
      const inboxId = tempInboxIdOf(address.slice(0, at));
      if (inboxId === null || !(await liveTempInbox(ports.commands, inboxId, new Date().toISOString())))
        return { accept: false, code: 550, message: 'No such mailbox here' };
      return { accept: true, recipient: inboxId };
    },
    async receive(message, recipients) {
      const { summary } = await ports.parse(await message.open(), message.blob.size);
      const now = message.receivedAt.toISOString();
      const raw = { sha256: message.blob.sha256, size: message.blob.size };
      for (const inboxId of new Set(recipients.map((r) => r.recipient))) {
        try {
          await receiveTempMail(ports.commands, inboxId, { mailFrom: message.mailFrom, raw, summary }, now);
        } catch (error) {
          if (!(error instanceof DomainError)) throw error;
          // Expired between RCPT and the end of DATA, or full.
          return error.code === 'temp_inbox_full'
            ? { accept: false, code: 552, message: 'Mailbox full' }
            : { accept: false, code: 550, message: 'No such mailbox here' };
        }
      }
      return { accept: true };
    },
  };
}
