import { z } from 'zod';
import { defineEvent, type EventOf } from '../shared/events.ts';

/**
 * One contact event sent by the caller, stored against the contact. `index` is its place in the
 * request (0 for POST /events) and `fingerprint` what the request said about it, so a retry under
 * the same Idempotency-Key is told apart from a different event under that key.
 */
export const ContactEventRecorded = defineEvent(
  'ContactEventRecorded',
  z.object({
    eventId: z.string(),
    index: z.number().int().min(0),
    fingerprint: z.string(),
    contactId: z.string(),
    email: z.string(),
    name: z.string(),
    properties: z.record(z.string(), z.unknown()),
    occurredAt: z.string(),
    mode: z.enum(['live', 'test']),
    createdAt: z.string(),
  }),
);

export const contactEventEvents = [ContactEventRecorded];
export type ContactEventEvent = EventOf<typeof ContactEventRecorded>;

/**
 * The events of one request are one stream: under an Idempotency-Key, the key's stream (a digest of
 * the key, so any allowed key fits a stream id); without one, a stream of the request alone. The
 * stream is the reservation: two requests with one key append to it with expected revisions, so
 * exactly one stores each position.
 */
export const contactEventsStream = (workspaceId: string, suffix: string) => `ws-${workspaceId}.contact-events-${suffix}`;
/** Every contact-event stream id matches this LIKE pattern (the retention purge finds them by it). */
export const CONTACT_EVENT_STREAM_LIKE = 'ws-%.contact-events-%';
