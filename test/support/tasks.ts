import { fileMessage } from '../../commands/threads/handlers.ts';
import type { AttachmentSummary } from '../../domain/messages/summary.ts';
import { mailboxLookups } from '../../system.ts';
import type { TestApp } from './app.ts';
import { arrivingMessage } from './inbound.ts';

/**
 * A message from Ann filed in `mailbox`, as the inbound listener files one (the threads' own
 * `fileMessage`): a new thread for each subject that does not claim to answer another.
 */
export async function fileFromAnn(
  h: TestApp,
  workspaceId: string,
  mailbox: { addressId: string | null; address: string; domainId: string; domain: string },
  subject: string,
  /** The stored raw message; a made-up address (no blob) when not given. */
  raw: { sha256: string; size: number } = { sha256: 'a'.repeat(64), size: 100 },
  attachments: AttachmentSummary[] = [],
) {
  const from = { name: 'Ann', address: 'ann@outside.test' };
  const message = arrivingMessage(`${crypto.randomUUID()}@outside.test`, {
    subject,
    from,
    to: [{ name: null, address: mailbox.address }],
    snippet: 'Where is my order?',
    attachments,
  });
  const filed = await fileMessage(h.system.commands, mailboxLookups(h.system.readDb), workspaceId, mailbox, {
    ...message,
    mailFrom: from.address,
    rcptTo: [mailbox.address],
    raw,
  });
  if (!filed) throw new Error('the message was filed already');
  return filed;
}
