import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { CONTACT_SOURCES } from '../../domain/contacts/events.ts';
import type { AudienceRow, ContactRow } from '../../projections/contacts/queries.ts';
import { isNarrowed } from '../credential.ts';
import { ApiError } from '../errors/api-error.ts';

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

export const audienceView = z.object({
  object: z.literal('audience'),
  id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  builtin: z.literal('default').nullable(),
  contactCount: z.number().int(),
  showOnPreferences: z.boolean(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export function viewAudience(row: AudienceRow): z.infer<typeof audienceView> {
  return {
    object: 'audience',
    id: row.id,
    name: row.name,
    description: row.description,
    builtin: row.builtin,
    contactCount: row.member_count,
    showOnPreferences: row.show_on_preferences,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/**
 * Contacts and audiences belong to the whole workspace: a credential narrowed to some addresses
 * or domains is refused on every route of the scope this guards, before scope and payload checks.
 */
export function refuseNarrowedCredentials(app: FastifyInstance): void {
  app.addHook('preHandler', async (request) => {
    const credential = request.credential;
    if (credential && isNarrowed(credential)) {
      throw new ApiError(
        'capability_unsupported',
        'Contacts and audiences belong to the whole workspace; a credential narrowed to some addresses or domains cannot use them.',
        'addressAllowlist',
      );
    }
  });
}

/** Code points, not UTF-16 units, as lengths count everywhere in this service. */
export const text = (max: number) =>
  z
    .string()
    .trim()
    .refine((s) => [...s].length <= max, { message: `at most ${max} characters` });
