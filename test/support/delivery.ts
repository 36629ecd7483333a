import { appendDecided } from '../../commands/execute.ts';
import { newId } from '../../commands/ids.ts';
import type { AcceptedRecipient, EmailEvent, SendingStream } from '../../domain/emails/events.ts';
import { emailStream } from '../../domain/emails/events.ts';
import { composeMessage, newMessageId } from '../../infra/outbound/compose.ts';
import type { RecordedEvent } from '../../infra/eventstore/port.ts';
import type { System } from '../../system.ts';
import type { TestDnsServer } from './dns-server.ts';
import { addDomain, publish } from './domains.ts';
import type { TestApp } from './app.ts';

/** A retry schedule in milliseconds instead of minutes: 300 ms, 300 ms, then every 300 ms, 3 s in all. */
export const FAST_RETRY = { delaysMs: [300, 300], intervalMs: 300, lifetimeMs: 3_000 };

export interface Sender {
  workspaceId: string;
  apiKey: string;
  domainId: string;
  domain: string;
  email: string;
}

/** A workspace with a sending domain whose records (DKIM included) are published on the loopback DNS server. */
export async function sendingWorkspace(h: TestApp, dns: TestDnsServer, domain: string): Promise<Sender> {
  const ws = await h.workspace();
  const added = await addDomain(h, ws.apiKey, domain);
  publish(dns, added.records);
  return { workspaceId: ws.workspaceId, apiKey: ws.apiKey, domainId: added.id, domain, email: `news@${domain}` };
}

export interface AcceptOptions {
  to: string[];
  scheduledAt?: string | null;
  stream?: SendingStream;
  mode?: 'live' | 'test';
  suppressed?: string[];
  subject?: string;
}

/**
 * What the accepting request records, given to the log directly: the composed message put into
 * the blob store and `EmailAccepted` appended. The pipeline under test follows from there.
 */
export async function acceptEmail(
  system: System,
  sender: Sender,
  options: AcceptOptions,
): Promise<{ emailId: string; messageId: string; stream: string }> {
  const emailId = newId.email();
  const messageId = newMessageId(sender.domain);
  const subject = options.subject ?? `Hello ${emailId}`;
  const all = [...options.to, ...(options.suppressed ?? [])];
  const { raw } = await composeMessage({
    messageId,
    date: new Date(),
    from: { address: sender.email, name: 'News' },
    to: all.map((address) => ({ address })),
    subject,
    text: `Hello from ${emailId}.\n`,
  });
  const blob = await system.blobs.put(raw);
  const recipients: AcceptedRecipient[] = [
    ...options.to.map((email) => ({ email, kind: 'to' as const, status: 'queued' as const, reason: null })),
    ...(options.suppressed ?? []).map((email) => ({
      email,
      kind: 'to' as const,
      status: 'suppressed' as const,
      reason: 'manual',
    })),
  ];
  const event: EmailEvent = {
    type: 'EmailAccepted',
    data: {
      emailId,
      messageId: messageId.slice(1, -1),
      from: { addressId: 'addr_000000000000000000000000', domainId: sender.domainId, email: sender.email, name: null },
      replyTo: [],
      subject,
      recipients,
      stream: options.stream ?? 'transactional',
      tags: [],
      raw: { sha256: blob.sha256, size: blob.size },
      template: null,
      signatureId: null,
      inReplyTo: null,
      scheduledAt: options.scheduledAt ?? null,
      mode: options.mode ?? 'live',
      source: 'api',
      acceptedAt: new Date().toISOString(),
    },
  };
  const stream = emailStream(sender.workspaceId, emailId);
  await appendDecided(
    system.commands,
    { workspaceId: sender.workspaceId, kind: 'system', id: null },
    stream,
    [event],
    'no_stream',
  );
  return { emailId, messageId, stream };
}

/** The stream's events once `done` says so; fails after `timeoutMs`. */
export async function eventsWhen(
  system: System,
  stream: string,
  done: (events: RecordedEvent[]) => boolean,
  timeoutMs = 15_000,
): Promise<RecordedEvent[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const events = await system.store.readStream(stream);
    if (done(events)) return events;
    if (Date.now() > deadline)
      throw new Error(`${stream}: not there after ${timeoutMs} ms: ${events.map((e) => e.type).join(', ')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Every queued recipient has a final answer (delivered or bounced). */
export const settled =
  (count: number) =>
  (events: RecordedEvent[]): boolean =>
    events.filter((e) => e.type === 'EmailRecipientDelivered' || e.type === 'EmailRecipientBounced').length >= count;

export const outcomes = (events: RecordedEvent[]) =>
  events
    .filter((e) => e.type.startsWith('EmailRecipient'))
    .map((e) => [e.type.replace('EmailRecipient', ''), e.data.recipient, e.data.attempt, e.data.code]);
