import type { Kysely } from 'kysely';
import type { ReadModels } from '../../../projections/tables.ts';
import { z } from 'zod';
import { CONTACT_SOURCES } from '../../../domain/contacts/events.ts';
import { contactAudienceIds, findContact, type ContactRow } from '../../../projections/contacts/queries.ts';
import { lookup } from '../../lookups.ts';

export const contactView = z.object({
  object: z.literal('contact'),
  id: z.string(),
  email: z.string(),
  name: z.string().nullable(),
  notes: z.string().nullable(),
  attributes: z.record(z.string(), z.string()),
  source: z.enum(CONTACT_SOURCES),
  lastSeenAt: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

/** Single reads add the audiences the contact is in now; list rows leave them out. */
export const contactDetailView = contactView.extend({ audienceIds: z.array(z.string()) });

export function viewContact(row: ContactRow): z.infer<typeof contactView> {
  return {
    object: 'contact',
    id: row.id,
    email: row.email,
    name: row.name,
    notes: row.notes,
    attributes: row.attributes,
    source: row.source,
    lastSeenAt: row.last_seen_at?.toISOString() ?? null,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** A single read: the contact with the audiences it is in now. */
export async function viewContactDetail(
  db: Kysely<ReadModels>,
  row: ContactRow,
): Promise<z.infer<typeof contactDetailView>> {
  return { ...viewContact(row), audienceIds: await contactAudienceIds(db, row.workspace_id, row.id) };
}

/** The path names a contact by address (trimmed, lower-cased) or by its `con_` id; 404 only means not in the book. */
export const contactOr404 = lookup(findContact, {
  code: 'contact_not_found',
  message: 'No contact with this address in the book.',
  param: 'email',
});
