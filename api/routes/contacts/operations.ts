import { z } from 'zod';
import { createContact, deleteContact, updateContact } from '../../../commands/contacts/handlers.ts';
import {
  attributesPatch,
  contactAttributes,
  contactEmail,
  contactName,
  contactNotes,
} from '../../../domain/contacts/fields.ts';
import { AUDIENCE_IDS_MAX } from '../../../domain/contacts/decide.ts';
import { CONTACT_SOURCES } from '../../../domain/contacts/events.ts';
import { listContacts } from '../../../projections/contacts/queries.ts';
import { actorOf } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { ApiError } from '../../errors/api-error.ts';
import { cursorParam, limitParam, pageSchema } from '../../paging.ts';
import { operation, type Operation } from '../../route.ts';
import { contactDetailView, contactOr404, contactView, viewContact, viewContactDetail } from './views.ts';

const emailParam = z.object({ email: z.string().max(400) });

const IMMUTABLE = ['email', 'source', 'lastSeenAt'] as const;

export const contactOperations = (deps: ApiDeps): Operation[] => [
  operation({
    method: 'GET',
    url: '/contacts',
    operationId: 'listContacts',
    summary: 'List contacts',
    description:
      'Scope: `contacts:read`. Most recently seen first, never-seen contacts last, then id descending. `q` searches words: every ' +
      'word of `q` (runs of letters and digits, any case) must be a word of the address or the name; the last may be the beginning ' +
      'of one. Rows leave out `audienceIds`.',
    scope: 'contacts:read',
    query: z.strictObject({
      limit: limitParam(200, 50),
      cursor: cursorParam,
      source: z.enum(CONTACT_SOURCES).optional(),
      q: z
        .string()
        .max(200)
        .optional()
        .describe('Words of the address or name, any case; the last word may be the beginning of a word.'),
    }),
    response: pageSchema(contactView),
    handler: async ({ credential, query }) =>
      deps.cursors.list(credential.workspaceId, query, {
        name: 'contacts',
        rows: (after: [string | null, string] | null, limit) =>
          listContacts(
            deps.db,
            credential.workspaceId,
            { q: query.q || undefined, source: query.source },
            limit,
            after,
          ),
        key: (r) => [r.last_seen_at?.toISOString() ?? null, r.id],
        view: viewContact,
      }),
  }),

  operation({
    method: 'GET',
    url: '/contacts/:email',
    operationId: 'getContact',
    errors: ['contact_not_found'],
    summary: 'Read a contact',
    description: 'Scope: `contacts:read`. The path holds the address (trimmed, lower-cased) or the contact id.',
    scope: 'contacts:read',
    params: emailParam,
    response: contactDetailView,
    handler: async ({ credential, params }) =>
      viewContactDetail(deps.db, await contactOr404(deps.db, credential.workspaceId, params.email)),
  }),

  operation({
    method: 'POST',
    url: '/contacts',
    operationId: 'createContact',
    errors: ['contact_exists', 'audience_not_found'],
    summary: 'Add a contact',
    description:
      'Scope: `contacts:write`, and `audiences:write` too when `audienceIds` is not empty (403 `insufficient_scope` before anything ' +
      'is saved). Saved with `source` `manual`, in the default audience and the audiences named. 409 `contact_exists` when the ' +
      'address is in the book already.',
    scope: 'contacts:write',
    body: z.strictObject({
      email: contactEmail,
      name: contactName.nullable().optional(),
      notes: contactNotes.nullable().optional(),
      attributes: contactAttributes.optional(),
      audienceIds: z.array(z.string().max(64)).max(AUDIENCE_IDS_MAX).optional(),
    }),
    status: 201,
    response: contactDetailView,
    handler: async ({ credential, body, request }) => {
      if (body.audienceIds && body.audienceIds.length > 0 && !credential.scopes.includes('audiences:write')) {
        throw new ApiError(
          'insufficient_scope',
          'Adding a contact to audiences needs the `audiences:write` scope too.',
          'audienceIds',
        );
      }
      const { created } = await createContact(
        deps.commands,
        actorOf(credential, request.id),
        {
          email: body.email,
          name: body.name ?? null,
          notes: body.notes ?? null,
          attributes: body.attributes ?? {},
          audienceIds: body.audienceIds ?? [],
          source: 'manual',
        },
        new Date().toISOString(),
      );
      if (!created) throw new ApiError('contact_exists', 'The address is in the contact book already.', 'email');
      return viewContactDetail(deps.db, await contactOr404(deps.db, credential.workspaceId, body.email));
    },
  }),

  operation({
    method: 'PATCH',
    url: '/contacts/:email',
    operationId: 'updateContact',
    errors: ['contact_not_found'],
    summary: 'Update a contact',
    description:
      'Scope: `contacts:write`. `name` and `notes`: omitted keeps, null clears. `attributes` are merged key by key; a null value ' +
      'removes the key; at most 50 keys after the merge. `email`, `source` and `lastSeenAt` cannot be changed (422 `invalid_parameter`).',
    scope: 'contacts:write',
    params: emailParam,
    body: z.strictObject({
      name: contactName.nullable().optional(),
      notes: contactNotes.nullable().optional(),
      attributes: attributesPatch.optional(),
      email: z.unknown().optional().describe('Cannot be changed: 422 `invalid_parameter`.'),
      source: z.unknown().optional().describe('Cannot be changed: 422 `invalid_parameter`.'),
      lastSeenAt: z.unknown().optional().describe('Cannot be changed: 422 `invalid_parameter`.'),
    }),
    response: contactDetailView,
    handler: async ({ credential, params, body, request }) => {
      for (const field of IMMUTABLE) {
        if (field in body)
          throw new ApiError('invalid_parameter', `\`${field}\` of a contact cannot be changed.`, field);
      }
      const row = await contactOr404(deps.db, credential.workspaceId, params.email);
      const patch: Parameters<typeof updateContact>[3] = {};
      if (body.name !== undefined) patch.name = body.name;
      if (body.notes !== undefined) patch.notes = body.notes;
      if (body.attributes !== undefined) patch.attributes = body.attributes;
      await updateContact(deps.commands, actorOf(credential, request.id), row.email, patch, new Date().toISOString());
      return viewContactDetail(deps.db, await contactOr404(deps.db, credential.workspaceId, row.email));
    },
  }),

  operation({
    method: 'DELETE',
    url: '/contacts/:email',
    operationId: 'deleteContact',
    errors: ['contact_not_found'],
    summary: 'Delete a contact',
    description:
      'Scope: `contacts:write`. The contact leaves the book and every audience. The path holds the address or the contact id.',
    scope: 'contacts:write',
    params: emailParam,
    response: z.object({ object: z.literal('contact'), id: z.string(), email: z.string(), deleted: z.literal(true) }),
    handler: async ({ credential, params, request }) => {
      const row = await contactOr404(deps.db, credential.workspaceId, params.email);
      const gone = await deleteContact(
        deps.commands,
        actorOf(credential, request.id),
        row.email,
        new Date().toISOString(),
      );
      return { object: 'contact' as const, id: gone.contactId, email: gone.email, deleted: true as const };
    },
  }),
];
