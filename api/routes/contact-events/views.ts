import { z } from 'zod';
import type { RecordAnswer } from '../../../commands/contact-events/record.ts';
import type { StoredEvent } from '../../../domain/contact-events/decide.ts';
import type { ContactEventRow } from '../../../projections/contact-events/queries.ts';

export const eventView = z.object({
  object: z.literal('contact_event'),
  id: z.string(),
  contactId: z.string(),
  email: z.string(),
  name: z.string(),
  properties: z.record(z.string(), z.unknown()),
  occurredAt: z.string(),
  mode: z.enum(['live', 'test']),
  createdAt: z.string(),
});
export const resultView = eventView.extend({
  replayed: z.boolean(),
  enrolled: z.array(z.string()),
  resumed: z.number().int().min(0),
});
export const batchView = z.object({
  object: z.literal('contact_event_batch'),
  accepted: z.array(resultView.extend({ index: z.number().int() })),
  failed: z.array(
    z.object({
      index: z.number().int(),
      code: z.enum(['invalid_event', 'contact_not_found', 'idempotency_key_reuse']),
      message: z.string(),
    }),
  ),
});

/** An event as a request stored it (the read model is not consulted). */
export const viewEvent = (d: StoredEvent) => ({
  object: 'contact_event' as const,
  id: d.eventId,
  contactId: d.contactId,
  email: d.email,
  name: d.name,
  properties: d.properties,
  occurredAt: d.occurredAt,
  mode: d.mode,
  createdAt: d.createdAt,
});

export const viewEventRow = (r: ContactEventRow) => ({
  object: 'contact_event' as const,
  id: r.id,
  contactId: r.contact_id,
  email: r.email,
  name: r.name,
  properties: r.properties,
  occurredAt: r.occurred_at.toISOString(),
  mode: r.mode,
  createdAt: r.created_at.toISOString(),
});

/** An event a request stored or replayed, with what enrolment made of it. */
export const viewResult = (a: RecordAnswer & { ok: true }) => ({
  ...viewEvent(a.event),
  replayed: a.replayed,
  enrolled: a.enrolled,
  resumed: a.resumed,
});
