import { domainOf } from '../shared/allowlists.ts';
import type { EventOfType, EventType } from '../registry.ts';
import { digestId } from '../shared/ids.ts';

/** The event families the spec names; every later feature adds its event names to one of them. */
export const FAMILIES = ['email', 'domain', 'suppression', 'file', 'form', 'automation', 'contact', 'sending'] as const;

/** The type of the delivery `POST /webhooks/{id}/test` sends. */
export const TEST_EVENT_TYPE = 'webhook.test';

/** A subscription entry: a family wildcard (`suppression.*`) or an event name of a known family. */
export const SUBSCRIPTION_PATTERN = new RegExp(`^(${FAMILIES.join('|')})\\.(\\*|[a-z][a-z0-9_.]{0,62})$`);

/**
 * Whether an endpoint hears an event type. No subscription (null or empty) means the default set:
 * the `email.*` events other than `email.replied`; every other family must be named.
 */
export function subscribes(eventTypes: readonly string[] | null, type: string): boolean {
  const family = type.slice(0, type.indexOf('.'));
  if (eventTypes === null || eventTypes.length === 0) return family === 'email' && type !== 'email.replied';
  return eventTypes.some((t) => t === type || t === `${family}.*`);
}

/** What an event is about, for allowlist narrowing. */
export interface Concerns {
  address?: string;
  domain?: string;
}

/**
 * An endpoint with allowlists hears an event only when the address or domain it concerns is
 * covered, exactly as for keys; an event about no address or domain reaches only unrestricted endpoints.
 */
export function covers(
  endpoint: { addressAllowlist: string[] | null; domainAllowlist: string[] | null },
  concerns: Concerns,
): boolean {
  if (endpoint.addressAllowlist === null && endpoint.domainAllowlist === null) return true;
  const domain = concerns.domain ?? (concerns.address ? domainOf(concerns.address) : undefined);
  if (concerns.address && (endpoint.addressAllowlist ?? []).includes(concerns.address)) return true;
  return domain !== undefined && (endpoint.domainAllowlist ?? []).includes(domain);
}

/** A domain event as endpoints receive it. */
export interface WebhookMessage {
  type: string;
  concerns: Concerns;
  data: Record<string, unknown>;
}

type Mapper<T extends EventType> = (data: EventOfType<T>['data'], occurredAt: string) => WebhookMessage;

/**
 * The one registry of domain events that become webhook events. A feature that adds a webhook
 * event adds its mapper here. Contact events concern the contact's address, so allowlists narrow them.
 */
const mappers = {
  SuppressionAdded: (d) => ({
    type: 'suppression.added',
    concerns: { address: d.email },
    data: { id: d.suppressionId, email: d.email, reason: d.reason, detail: d.detail, createdAt: d.createdAt },
  }),
  ContactCreated: (d) => ({
    type: 'contact.created',
    concerns: { address: d.email },
    data: {
      id: d.contactId,
      email: d.email,
      name: d.name,
      notes: d.notes,
      attributes: d.attributes,
      source: d.source,
      audienceIds: d.audienceIds,
      createdAt: d.createdAt,
    },
  }),
  ContactUpdated: (d) => ({
    type: 'contact.updated',
    concerns: { address: d.email },
    data: {
      id: d.contactId,
      email: d.email,
      name: d.name,
      notes: d.notes,
      attributes: d.attributes,
      updatedAt: d.updatedAt,
    },
  }),
  ContactDeleted: (d) => ({
    type: 'contact.deleted',
    concerns: { address: d.email },
    data: { id: d.contactId, email: d.email, deletedAt: d.deletedAt },
  }),
  ContactUnsubscribed: (d) => ({
    type: 'contact.unsubscribed',
    concerns: { address: d.email },
    data: {
      id: d.unsubscribeId,
      email: d.email,
      contactId: d.contactId,
      audienceId: d.audienceId,
      source: d.source,
      createdAt: d.createdAt,
    },
  }),
  // Arriving mail concerns the mailbox it is filed in (a catch-all's, `*@<domain>`, through its domain).
  MessageReceived: (d) => ({
    type: 'email.received',
    concerns: { address: d.mailbox.address, domain: d.mailbox.domain },
    data: {
      id: d.messageId,
      threadId: d.threadId,
      address: d.mailbox.address,
      addressId: d.mailbox.addressId,
      messageId: d.summary.messageId,
      from: d.summary.from,
      to: d.summary.to,
      cc: d.summary.cc,
      subject: d.summary.subject,
      snippet: d.summary.snippet,
      attachments: d.summary.attachments.map((a) => ({
        filename: a.filename,
        contentType: a.contentType,
        size: a.size,
      })),
      spam: d.spam.spam,
      label: d.label,
      receivedAt: d.receivedAt,
    },
  }),
  SentEmailReplied: (d) => ({
    type: 'email.replied',
    concerns: { address: d.mailbox.address, domain: d.mailbox.domain },
    data: {
      id: d.messageId,
      emailId: d.emailId,
      threadId: d.threadId,
      address: d.mailbox.address,
      from: d.from,
      subject: d.subject,
      receivedAt: d.receivedAt,
    },
  }),
  // Domain events concern the domain, so a domain allowlist narrows them.
  DomainVerified: (d) => ({
    type: 'domain.verified',
    concerns: { domain: d.domain },
    data: { id: d.domainId, domain: d.domain, receiving: d.receiving, sending: d.sending, verifiedAt: d.verifiedAt },
  }),
  DomainVerificationFailed: (d) => ({
    type: 'domain.failed',
    concerns: { domain: d.domain },
    data: { id: d.domainId, domain: d.domain, error: d.error, failedAt: d.failedAt },
  }),
  DomainDeleted: (d) => ({
    type: 'domain.deleted',
    concerns: { domain: d.domain },
    data: { id: d.domainId, domain: d.domain, deletedAt: d.deletedAt },
  }),
  // A sent message's events concern its sender: an address or domain allowlist narrows them.
  EmailSendingStarted: (d) => ({
    type: 'email.sent',
    concerns: d.from ? { address: d.from.email } : {},
    data: { id: d.emailId, messageId: d.messageId ?? null, from: d.from?.email ?? null, sentAt: d.startedAt },
  }),
  EmailRecipientDelivered: (d) => ({
    type: 'email.delivered',
    concerns: { address: d.from.email },
    data: { ...attemptData(d), deliveredAt: d.at },
  }),
  EmailRecipientDeferred: (d) => ({
    type: 'email.delivery_delayed',
    concerns: { address: d.from.email },
    data: { ...attemptData(d), nextAttemptAt: d.nextAttemptAt, delayedAt: d.at },
  }),
  EmailRecipientBounced: (d) => ({
    type: 'email.bounced',
    concerns: { address: d.from.email },
    data: { ...attemptData(d), bounce: d.bounce, bouncedAt: d.at },
  }),
  EmailRecipientComplained: (d) => ({
    type: 'email.complained',
    concerns: { address: d.from.email },
    data: {
      id: d.emailId,
      messageId: d.messageId,
      from: d.from.email,
      stream: d.stream,
      recipient: d.recipient,
      feedbackType: d.feedbackType,
      complainedAt: d.at,
    },
  }),
  EmailOpened: (d) => ({
    type: 'email.opened',
    concerns: { address: d.from.email },
    data: { ...engagementData(d), openedAt: d.at },
  }),
  EmailLinkClicked: (d) => ({
    type: 'email.clicked',
    concerns: { address: d.from.email },
    data: { ...engagementData(d), url: d.url, clickedAt: d.at },
  }),
} satisfies { [T in EventType]?: Mapper<T> };

/** What every per-recipient answer of a delivery attempt tells a receiver: the message, the recipient, the SMTP reply. */
function attemptData(d: EventOfType<'EmailRecipientDelivered'>['data']) {
  return {
    id: d.emailId,
    messageId: d.messageId,
    from: d.from.email,
    stream: d.stream,
    recipient: d.recipient,
    attempt: d.attempt,
    smtp: { code: d.code, enhancedCode: d.enhancedCode, response: d.response, mx: d.mx, tls: d.tls },
  };
}

/** An open or a click; `recipient` null when the message went to several (one body, no telling which). */
function engagementData(d: EventOfType<'EmailOpened'>['data']) {
  return {
    id: d.emailId,
    messageId: d.messageId,
    from: d.from.email,
    stream: d.stream,
    recipient: d.recipient === '' ? null : d.recipient,
    userAgent: d.userAgent,
  };
}

/** The domain event types that become webhook events. */
export type WebhookSourceType = keyof typeof mappers;
export const WEBHOOK_SOURCE_TYPES = Object.keys(mappers) as WebhookSourceType[];

/** The webhook message a decoded event becomes; null when its type becomes none. */
export function webhookMessageOf(
  event: { type: string; data: Record<string, unknown> },
  occurredAt: string,
): WebhookMessage | null {
  if (!Object.hasOwn(mappers, event.type)) return null;
  // The registry decoded the event, so its data has the shape its type's mapper takes.
  const map = mappers[event.type as WebhookSourceType] as Mapper<WebhookSourceType>;
  return map(event.data as EventOfType<WebhookSourceType>['data'], occurredAt);
}

/** A delivery's id follows from the event's position and the endpoint: replaying the log never makes a second one. */
export const deliveryIdOf = (position: number, endpointId: string) =>
  digestId('webhookDelivery', `${position}:${endpointId}`);
