import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import {
  EVENT_RATE_LIMIT,
  recordContactEventRequest,
  type RecordAnswer,
  type RecordingPorts,
} from '../../../commands/contact-events/record.ts';
import { BATCH_MAX, type EventInput } from '../../../domain/contact-events/rules.ts';
import { idPatterns } from '../../../domain/shared/ids.ts';
import { outcomesOf } from '../../../projections/automations/queries.ts';
import { lookupContacts } from '../../../projections/contacts/queries.ts';
import { findContactEvent, listContactEvents, listEventNames } from '../../../projections/contact-events/queries.ts';
import { actorOf, type Credential } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { ApiError } from '../../errors/api-error.ts';
import { idempotencyKeyOf } from '../../idempotency.ts';
import { cursorParam, limitParam, listByLastId, pageSchema, WALK_OVER } from '../../paging.ts';
import { operation, type Operation } from '../../route.ts';
import { contactOr404 } from '../contacts/views.ts';
import { batchView, eventView, resultView, viewEventRow, viewResult } from './views.ts';

/** The shape of one event; its rules (pattern, sizes, dates) are checked per event by domain/contact-events/rules.ts. */
const eventShape = z.strictObject({
  name: z
    .string()
    .describe('1 to 100 of letters, digits, `.`, `:`, `-`, `_`, starting with a letter or digit; case-sensitive.'),
  email: z
    .string()
    .optional()
    .describe(
      "The contact's address (up to 320); one of `email` and `contactId` is required. When both are sent they must name one contact.",
    ),
  contactId: z.string().optional().describe('A `con_` id (1 to 64 characters).'),
  properties: z
    .record(z.string(), z.unknown())
    .optional()
    .describe('At most 50 keys and 4 KB as JSON. A property named `email` is stored but never reaches automations.'),
  occurredAt: z
    .string()
    .optional()
    .describe('ISO 8601 with a zone; default now; at most 60 s ahead of the server clock; not older than 90 days.'),
  createContact: z
    .boolean()
    .optional()
    .describe('Create the contact (source `auto`) when the address is not in the book; needs `email`.'),
  contactName: z
    .string()
    .optional()
    .describe('Name of a contact `createContact` makes (up to 200); an existing contact keeps its name.'),
});

const idempotencyHeader = {
  'idempotency-key':
    'Up to 255 of letters, digits, `_ . : -`. The same key with the same event answers the stored event (`replayed: true`) and starts nothing; with a different event, 422 `idempotency_key_reuse`. Keys are per workspace and mode, and kept as long as their events (90 days).',
};

/** Records a request's events (commands/contact-events/record.ts); a request past the rate limit is 429 with nothing stored. */
async function record(
  recording: RecordingPorts,
  credential: Credential,
  request: FastifyRequest,
  inputs: EventInput[],
): Promise<RecordAnswer[]> {
  const recorded = await recordContactEventRequest(recording, {
    actor: actorOf(credential, request.id),
    mode: credential.mode,
    allowanceIdentity: `events:${credential.id ?? credential.clientId}`,
    idempotencyKey: idempotencyKeyOf(request.headers),
    inputs,
  });
  if (recorded.rateLimited) {
    throw new ApiError(
      'event_rate_limited',
      `At most ${EVENT_RATE_LIMIT} contact events per minute per key; nothing was stored.`,
      null,
      429,
      {
        'Retry-After': String(recorded.resetSeconds),
      },
    );
  }
  return recorded.answers;
}

export const contactEventOperations = (deps: ApiDeps): Operation[] => {
  const recording: RecordingPorts = {
    commands: deps.commands,
    lookupContacts: (workspaceId, emails, ids) => lookupContacts(deps.db, workspaceId, emails, ids),
    outcomesOf: (eventIds) => outcomesOf(deps.db, eventIds),
    allowance: deps.rateLimiter,
  };
  return [
    operation({
      method: 'POST',
      url: '/events',
      operationId: 'sendContactEvent',
      errors: [
        'invalid_idempotency_key',
        'invalid_event',
        'contact_not_found',
        'idempotency_key_reuse',
        'event_rate_limited',
      ],
      summary: 'Send a contact event',
      description:
        'Scope: `contacts:write`. Stores the event against the contact for 90 days; a live event enrols the contact in every matching live ' +
        'automation (`enrolled`) and ends its waits for this name (`resumed`), both known when this answers. 201 when stored, 200 for a ' +
        'replay under the same Idempotency-Key. A test key stores it with mode `test`; it starts nothing. Counts against 600 events per minute per key.',
      scope: 'contacts:write',
      headers: idempotencyHeader,
      // Per event and position, as the spec defines for contact events (above), not the generic layer.
      idempotency: false,
      body: eventShape,
      status: 201,
      response: resultView,
      handler: async ({ credential, body, request, reply }) => {
        const [answer] = await record(recording, credential, request, [body]);
        if (!answer!.ok) {
          const status = answer!.code === 'contact_not_found' ? 404 : 422;
          throw new ApiError(answer!.code, answer!.message, answer!.param, status);
        }
        if (answer!.replayed) reply.code(200);
        return viewResult(answer!);
      },
    }),

    operation({
      method: 'POST',
      url: '/events/batch',
      operationId: 'sendContactEvents',
      errors: ['invalid_idempotency_key', 'event_rate_limited'],
      summary: 'Send up to 100 contact events',
      description:
        'Scope: `contacts:write`. Each event is checked and stored in order, and remembered under the Idempotency-Key and its position; ' +
        'one failing does not stop the rest (`failed`: `invalid_event`, `contact_not_found`, `idempotency_key_reuse`). A wrong-shaped body, ' +
        'an empty array or more than 100 events is refused whole (422 `invalid_parameter`, `param` like `events.3.name`). Counts as its ' +
        'number of events against 600 per minute per key: a batch that would pass it is refused whole (429 `event_rate_limited`).',
      scope: 'contacts:write',
      headers: idempotencyHeader,
      // Per event and position, as the spec defines for contact events (above), not the generic layer.
      idempotency: false,
      body: z.strictObject({ events: z.array(eventShape).min(1).max(BATCH_MAX) }),
      response: batchView,
      handler: async ({ credential, body, request }) => {
        const answers = await record(recording, credential, request, body.events);
        return {
          object: 'contact_event_batch' as const,
          accepted: answers.flatMap((a) => (a.ok ? [{ ...viewResult(a), index: a.index }] : [])),
          failed: answers.flatMap((a) =>
            a.ok ? [] : [{ index: a.index, code: a.code as 'invalid_event', message: a.message }],
          ),
        };
      },
    }),

    operation({
      method: 'GET',
      url: '/events/names',
      operationId: 'listContactEventNames',
      summary: 'Event names in use',
      description:
        "Scope: `automations:read`. Distinct names of the stored contact events of the caller's mode, in byte order, at most 100; not paginated.",
      scope: 'automations:read',
      response: z.object({
        object: z.literal('list'),
        data: z.array(z.object({ object: z.literal('contact_event_name'), name: z.string() })),
      }),
      handler: async ({ credential }) => {
        const names = await listEventNames(deps.db, credential.workspaceId, 100);
        return {
          object: 'list' as const,
          data: names.map((name) => ({ object: 'contact_event_name' as const, name })),
        };
      },
    }),

    operation({
      method: 'GET',
      url: '/contacts/:email/events',
      operationId: 'listContactEvents',
      errors: ['contact_not_found'],
      summary: "A contact's events",
      description:
        'Scope: `contacts:read`. The path takes the address (trimmed, lower-cased) or a `con_` id. Most recent first by occurrence; ' +
        '`cursor` is the id of the last event of the previous page (`nextCursor`); an event of another contact or `name` is 400 ' +
        '`invalid_cursor`. When that event has since been purged (older than 90 days), so have all after it: an empty last page, as for ' +
        'an id naming no event of the workspace.',
      scope: 'contacts:read',
      params: z.object({ email: z.string().min(1).max(320).describe('An address or a contact id.') }),
      query: z.strictObject({
        name: z.string().min(1).max(100).optional(),
        limit: limitParam(200, 50),
        cursor: cursorParam,
      }),
      response: pageSchema(eventView),
      handler: async ({ credential, params, query }) => {
        const contact = await contactOr404(deps.db, credential.workspaceId, params.email.trim());
        return listByLastId(query, {
          refused: 'an event of this list',
          after: async (id) => {
            if (!idPatterns.contactEvent.test(id)) return null;
            const last = await findContactEvent(deps.db, credential.workspaceId, id);
            // Only retention removes events, and with one it removes every event listed after it (they
            // occurred no later): a walk whose last row was purged is over. An id never handed out
            // looks the same and gets the same empty page, and so does another workspace's event:
            // answering it otherwise would tell that it exists.
            if (!last) return WALK_OVER;
            const ofThisList = last.contact_id === contact.id && (query.name === undefined || last.name === query.name);
            return ofThisList ? { occurredAt: last.occurred_at, id: last.id } : null;
          },
          rows: (after, limit) =>
            listContactEvents(deps.db, credential.workspaceId, contact.id, { name: query.name, limit, after }),
          view: viewEventRow,
        });
      },
    }),
  ];
};
