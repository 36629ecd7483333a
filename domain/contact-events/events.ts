import { z } from 'zod';
import { defineEvent, type EventOf } from '../shared/events.ts';

const entry = {
  eventId: z.string(),
  /** Place in the request (0 for POST /events): retries under one Idempotency-Key are compared per place. */
  index: z.number().int().min(0),
  /** SHA-256 of the event as the request sent it, so a retry is told apart from a different event under the key. */
  fingerprint: z.string(),
  contactId: z.string(),
  email: z.string(),
  name: z.string(),
  properties: z.record(z.string(), z.unknown()),
  occurredAt: z.string(),
};

/**
 * The contact events one request stored, in order: one domain event per request (per append),
 * not per contact event, so a batch of 100 is one row of the log for every subscriber to read.
 */
export const ContactEventsRecorded = defineEvent(
  'ContactEventsRecorded',
  z.object({ mode: z.enum(['live', 'test']), createdAt: z.string(), events: z.array(z.object(entry)).min(1) }),
);

/** The first shape (one domain event per contact event); still read, no longer written. */
export const ContactEventRecorded = defineEvent(
  'ContactEventRecorded',
  z.object({ ...entry, mode: z.enum(['live', 'test']), createdAt: z.string() }),
);

export const contactEventEvents = [ContactEventsRecorded, ContactEventRecorded];
export type ContactEventEvent = EventOf<typeof ContactEventsRecorded> | EventOf<typeof ContactEventRecorded>;
export const CONTACT_EVENT_TYPES = ['ContactEventsRecorded', 'ContactEventRecorded'] as const;

/** One contact event as stored, whichever shape carried it. */
export interface StoredContactEvent {
  eventId: string;
  index: number;
  fingerprint: string;
  contactId: string;
  email: string;
  name: string;
  properties: Record<string, unknown>;
  occurredAt: string;
  mode: 'live' | 'test';
  createdAt: string;
}

export function entriesOf(event: ContactEventEvent): StoredContactEvent[] {
  if (event.type === 'ContactEventRecorded') return [event.data];
  const d = event.data;
  return d.events.map((e) => ({ ...e, mode: d.mode, createdAt: d.createdAt }));
}

/**
 * The events of one request are one stream: under an Idempotency-Key, the key's stream (a digest of
 * the key, so any allowed key fits a stream id); without one, a stream of the request alone. The
 * stream is the reservation: two requests with one key append to it with expected revisions, so
 * exactly one stores each position.
 */
export const contactEventsStream = (workspaceId: string, suffix: string) =>
  `ws-${workspaceId}.contact-events-${suffix}`;
/** Every contact-event stream id matches this LIKE pattern (the retention purge finds them by it). */
export const CONTACT_EVENT_STREAM_LIKE = 'ws-%.contact-events-%';
