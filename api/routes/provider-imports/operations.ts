import { z } from 'zod';
import {
  cancelProviderImport,
  inspectProvider,
  startProviderImport,
} from '../../../commands/provider-imports/handlers.ts';
import { IMPORT_RESOURCES, PROVIDERS } from '../../../domain/provider-imports/providers.ts';
import { idPatterns } from '../../../domain/shared/ids.ts';
import { findProviderImport, listProviderImports } from '../../../projections/provider-imports/queries.ts';
import { actorOf } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { createdKey, cursorParam, limitParam, listByLastId, pageSchema } from '../../paging.ts';
import { operation, type Operation } from '../../route.ts';
import { providerImportOr404, providerImportView, viewProviderImport } from './views.ts';

const apiKey = z
  .string()
  .min(1)
  .max(1000)
  .describe("The other provider's API key; used for this call (inspect) or while the import runs, never shown again.");
const provider = z
  .enum(PROVIDERS)
  .default(PROVIDERS[0])
  .describe(`The provider to import from; default \`${PROVIDERS[0]}\`.`);

const countView = z.object({
  count: z.number().int().describe('Rows on the first page, or the total when the provider says it.'),
  more: z.boolean().describe('More follow past the first page: `count` is then a lower bound.'),
});

const inspectionView = z.object({
  provider: z.enum(PROVIDERS),
  resources: z.array(z.enum(IMPORT_RESOURCES)).describe('The resources this provider has an API for.'),
  counts: z.object(
    Object.fromEntries(IMPORT_RESOURCES.map((r) => [r, countView])) as Record<
      (typeof IMPORT_RESOURCES)[number],
      typeof countView
    >,
  ),
});

const idParams = z.object({ id: z.string() });
const KEY_ERRORS = ['restricted_key', 'provider_key_refused', 'provider_unavailable'] as const;

export const providerImportOperations = (deps: ApiDeps): Operation[] => [
  operation({
    method: 'POST',
    url: '/provider-imports/inspect',
    operationId: 'inspectProviderImport',
    errors: [...KEY_ERRORS],
    summary: 'See what another provider holds',
    description:
      'Scope: `settings:write`. Reads a first page of each resource the provider offers with the key and answers the ' +
      'counts; nothing is stored and the key is not kept. 400 `restricted_key` for a send-only key, 400 ' +
      "`provider_key_refused` (the provider's words quoted) for a key it refuses, 503 `provider_unavailable` when it does not answer.",
    scope: 'settings:write',
    // It changes nothing, so a repeat needs no Idempotency-Key (and no fingerprint of a body holding a key is kept).
    idempotency: false,
    body: z.strictObject({ apiKey, provider }),
    response: inspectionView,
    handler: async ({ body }) => inspectProvider(deps.providerImports, body.provider, body.apiKey),
  }),

  operation({
    method: 'POST',
    url: '/provider-imports',
    operationId: 'createProviderImport',
    errors: [...KEY_ERRORS, 'already_running'],
    summary: 'Import from another provider',
    description:
      'Scope: `settings:write`. Checks the key with the provider, then queues the import: suppressions keep their reason, ' +
      'lists become audiences, subscribed contacts arrive with names and attributes (unsubscribed ones are counted, not ' +
      'imported), templates arrive as html templates with their variables declared, webhooks are registered switched off, ' +
      'domains and API keys come back as a checklist in the report. Re-running duplicates nothing. One per workspace at a ' +
      'time (409 `already_running`). The key is held encrypted while the import runs and erased when it ends, fails or is cancelled.',
    scope: 'settings:write',
    body: z.strictObject({
      apiKey,
      provider,
      resources: z
        .array(z.enum(IMPORT_RESOURCES))
        .min(1)
        .max(IMPORT_RESOURCES.length)
        .describe('What to import; each at most once, brought in the order listed in the enum.'),
    }),
    status: 201,
    response: providerImportView,
    handler: async ({ credential, body, request }) => {
      const id = await startProviderImport(
        deps.commands,
        deps.providerImports,
        actorOf(credential, request.id),
        { provider: body.provider, apiKey: body.apiKey, resources: [...new Set(body.resources)] },
        new Date().toISOString(),
      );
      return viewProviderImport(await providerImportOr404(deps.db, credential.workspaceId, id));
    },
  }),

  operation({
    method: 'GET',
    url: '/provider-imports',
    operationId: 'listProviderImports',
    summary: 'List provider imports',
    description:
      'Scope: `settings:read`. Newest first, each with its report. `cursor` is the id of the last import of the previous page.',
    scope: 'settings:read',
    query: z.strictObject({ limit: limitParam(), cursor: cursorParam }),
    response: pageSchema(providerImportView),
    handler: async ({ credential, query }) =>
      listByLastId(query, {
        refused: 'a provider import of this workspace',
        after: async (id) => {
          if (!idPatterns.providerImport.test(id)) return null;
          const row = await findProviderImport(deps.db, credential.workspaceId, id);
          return row ? createdKey(row) : null;
        },
        rows: (after, limit) => listProviderImports(deps.db, credential.workspaceId, limit, after),
        view: viewProviderImport,
      }),
  }),

  operation({
    method: 'GET',
    url: '/provider-imports/:id',
    operationId: 'getProviderImport',
    errors: ['resource_not_found'],
    summary: 'Get a provider import and its report',
    scope: 'settings:read',
    params: idParams,
    response: providerImportView,
    handler: async ({ credential, params }) =>
      viewProviderImport(await providerImportOr404(deps.db, credential.workspaceId, params.id)),
  }),

  operation({
    method: 'POST',
    url: '/provider-imports/:id/cancel',
    operationId: 'cancelProviderImport',
    errors: ['resource_not_found'],
    summary: 'Cancel a provider import',
    description:
      'Scope: `settings:write`. A queued or running import stops after the page under way (what it made stays) and its key ' +
      'is erased; a completed, failed or cancelled import is answered as it is.',
    scope: 'settings:write',
    params: idParams,
    response: providerImportView,
    handler: async ({ credential, params, request }) => {
      const row = await providerImportOr404(deps.db, credential.workspaceId, params.id);
      await cancelProviderImport(
        deps.commands,
        deps.providerImports,
        actorOf(credential, request.id),
        row.id,
        new Date().toISOString(),
      );
      return viewProviderImport(await providerImportOr404(deps.db, credential.workspaceId, row.id));
    },
  }),
];
