import { appendDecided } from '../../commands/execute.ts';
import { newId } from '../../commands/ids.ts';
import { decideReceiveMessage } from '../../domain/threads/decide.ts';
import { threadStream } from '../../domain/threads/events.ts';
import { threadAggregate } from '../../domain/threads/state.ts';
import type { TestApp } from './app.ts';

/**
 * A message from Ann filed in `mailbox`, as the inbound listener files one: the thread's own
 * decider, appended to the store (reactors and projections then see it as any arrival).
 */
export async function fileMessage(
  h: TestApp,
  workspaceId: string,
  mailbox: { addressId: string | null; address: string; domainId: string; domain: string },
  subject: string,
  /** The stored raw message; a made-up address (no blob) when not given. */
  raw: { sha256: string; size: number } = { sha256: 'a'.repeat(64), size: 100 },
) {
  const threadId = newId.thread();
  const messageId = newId.message();
  const events = decideReceiveMessage(threadAggregate.initialState, {
    message: {
      threadId,
      messageId,
      mailbox,
      mailFrom: 'ann@outside.test',
      rcptTo: [mailbox.address],
      client: { ip: '192.0.2.1', helo: 'mail.outside.test' },
      raw,
      summary: {
        messageId: `${messageId}@outside.test`,
        inReplyTo: [],
        references: [],
        date: null,
        subject,
        from: { name: 'Ann', address: 'ann@outside.test' },
        replyTo: [],
        to: [{ name: null, address: mailbox.address }],
        cc: [],
        bcc: [],
        headers: [],
        headersTruncated: false,
        snippet: 'Where is my order?',
        attachments: [],
        size: 100,
      },
      authentication: {
        spf: { result: 'none', domain: null },
        dkim: [],
        dmarc: null,
        dmarcSkipped: null,
        arc: { result: 'none', instance: 0 },
        header: '',
      } as never,
      spam: { spam: false, reasons: [], score: null },
      threadedBy: 'new',
      normalisedSubject: subject.toLowerCase(),
      receivedAt: new Date().toISOString(),
    },
    replyTo: null,
  });
  const actor = { workspaceId: workspaceId, kind: 'system' as const, id: null };
  await appendDecided(h.system.commands, actor, threadStream(workspaceId, threadId), events, 'no_stream');
  return { threadId, messageId };
}
