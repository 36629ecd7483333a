import { z } from 'zod';
import { idPatterns } from '../../../domain/shared/ids.ts';
import { findAudience, type AudienceRow } from '../../../projections/contacts/queries.ts';
import { lookup } from '../../lookups.ts';

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

/** A malformed id is just another id that names nothing here: 404, never a validation error. */
export const audienceOr404 = lookup(findAudience, {
  code: 'audience_not_found',
  message: 'No such audience.',
  param: 'id',
  pattern: idPatterns.audience,
});

export const membershipView = z.object({
  object: z.literal('audience_membership'),
  audienceId: z.string(),
  contactId: z.string(),
  email: z.string(),
  member: z.boolean(),
});

const bucketView = z.object({
  key: z.string(),
  subscribed: z.number().int(),
  unsubscribed: z.number().int(),
  added: z.number().int(),
});
export const growthView = z.object({
  object: z.literal('audience_growth'),
  audiences: z.array(
    z.object({
      audienceId: z.string(),
      name: z.string(),
      builtin: z.literal('default').nullable(),
      total: z.number().int(),
      before: z.number().int(),
      added: z.number().int(),
      subscribed: z.number().int(),
      unsubscribed: z.number().int(),
      buckets: z.array(bucketView),
    }),
  ),
  totals: z.object({
    contacts: z.number().int(),
    memberships: z.number().int(),
    subscribed: z.number().int(),
    unsubscribed: z.number().int(),
    busiest: z.string().nullable(),
  }),
  since: z.string(),
  until: z.string(),
});
