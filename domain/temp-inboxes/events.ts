import { z } from 'zod';
import { MessageSummary } from '../messages/summary.ts';
import { defineEvent, type EventOf } from '../shared/events.ts';

/**
 * Disposable inboxes: made without a key on the service's disposable domain (`TEMP_MAIL_DOMAIN`),
 * read with the access token handed out once, gone at expiry. They belong to no workspace, so
 * their streams are the service's. The token's SHA-256 is in the event, never the token.
 */
export const TempInboxCreated = defineEvent(
  'TempInboxCreated',
  z.object({
    inboxId: z.string(),
    address: z.string(),
    tokenHash: z.string(),
    createdAt: z.string(),
    expiresAt: z.string(),
  }),
);

/** A message arrived through the MX; its bytes are in the blob store, the summary here. */
export const TempInboxMessageReceived = defineEvent(
  'TempInboxMessageReceived',
  z.object({
    inboxId: z.string(),
    messageId: z.string(),
    mailFrom: z.string(),
    raw: z.object({ sha256: z.string(), size: z.number().int() }),
    summary: MessageSummary,
    receivedAt: z.string(),
  }),
);

/** The inbox's time ran out: it and its messages are gone from the read model. */
export const TempInboxExpired = defineEvent(
  'TempInboxExpired',
  z.object({ inboxId: z.string(), expiredAt: z.string() }),
);

/** One create counted against a network's allowance (10 per 10 minutes). */
export const TempInboxAllowanceTaken = defineEvent(
  'TempInboxAllowanceTaken',
  z.object({ network: z.string(), inboxId: z.string(), takenAt: z.string() }),
);

export const tempInboxEvents = [TempInboxCreated, TempInboxMessageReceived, TempInboxExpired, TempInboxAllowanceTaken];
export type TempInboxEvent =
  | EventOf<typeof TempInboxCreated>
  | EventOf<typeof TempInboxMessageReceived>
  | EventOf<typeof TempInboxExpired>;
export type TempInboxAllowanceEvent = EventOf<typeof TempInboxAllowanceTaken>;

export const tempInboxStream = (inboxId: string) => `service.temp-inbox-${inboxId}`;
/** One stream per network: the allowance is decided over the network's recent creates. */
export const tempInboxNetworkStream = (network: string) => `service.temp-inbox-network-${network}`;
/** Both kinds of stream, for the retention's deletes (processes/temp-inboxes/retention.ts). */
export const TEMP_INBOX_STREAM_PREFIX = 'service.temp-inbox-';
export const TEMP_INBOX_NETWORK_STREAM_PREFIX = 'service.temp-inbox-network-';
