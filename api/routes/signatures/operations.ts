import { z } from 'zod';
import {
  copySignature,
  createSignature,
  deleteSignature,
  setLegacySignature,
  setSignatureDefaults,
  updateSignature,
} from '../../../commands/signatures/handlers.ts';
import { SIGNATURES_MAX } from '../../../domain/signatures/decide.ts';
import { listSignatures, type SignatureRow } from '../../../projections/signatures/queries.ts';
import { actorOf } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { reachOf } from '../../narrowing.ts';
import { cursorParam, limitParam, pageSchema } from '../../paging.ts';
import { operation, type Operation } from '../../route.ts';
import {
  idParams,
  ownerOf,
  signatureAddress,
  signatureHtmlInput,
  signatureName,
  signatureOr404,
  signatureView,
  viewSignature,
} from './views.ts';

const signatureKey = (row: SignatureRow): [string, string, string] => [
  row.address,
  row.created_at.toISOString(),
  row.id,
];

export const signatureOperations = (deps: ApiDeps): Operation[] => {
  /** The signature as the read model holds it now (read-your-writes: the command waited for it). */
  const reread = (workspaceId: string, id: string) =>
    signatureOr404(deps.db, workspaceId, null, id).then(viewSignature);
  return [
    operation({
      method: 'GET',
      url: '/signatures',
      operationId: 'listSignatures',
      errors: ['address_not_found'],
      summary: 'List signatures',
      description:
        'Scope: `settings:read`. Sorted by address, then oldest first; `address` (an address or `*@<domain>`) lists one ' +
        "address's. A narrowed credential sees only its addresses' signatures, and a catch-all's only with the whole domain.",
      scope: 'settings:read',
      query: z.strictObject({ address: signatureAddress.optional(), limit: limitParam(), cursor: cursorParam }),
      response: pageSchema(signatureView),
      handler: async ({ credential, query }) =>
        deps.cursors.list(credential.workspaceId, query, {
          name: 'signatures',
          rows: (after, limit) =>
            listSignatures(
              deps.db,
              credential.workspaceId,
              { address: query.address, reach: reachOf(credential) },
              limit,
              after,
            ),
          key: signatureKey,
          view: viewSignature,
        }),
    }),

    operation({
      method: 'GET',
      url: '/signatures/:id',
      operationId: 'getSignature',
      errors: ['resource_not_found'],
      summary: 'Read a signature',
      description: 'Scope: `settings:read`. 404 also for a signature of an address a narrowed key does not hold.',
      scope: 'settings:read',
      params: idParams,
      response: signatureView,
      handler: async ({ credential, params }) =>
        viewSignature(await signatureOr404(deps.db, credential.workspaceId, reachOf(credential), params.id)),
    }),

    operation({
      method: 'POST',
      url: '/signatures',
      operationId: 'createSignature',
      errors: ['address_not_found', 'capability_unsupported', 'signature_name_taken', 'signature_limit_reached'],
      summary: 'Create a signature',
      description:
        'Scope: `settings:write`. On an address of the workspace, or a catch-all (`*@<domain>`) on a verified domain with ' +
        '`catchAll` on (404 `address_not_found` otherwise). The html is sanitised like outgoing mail. The first signature of ' +
        'an address becomes both defaults unless `isDefault`/`isReplyDefault` is sent false; a later one takes a place only ' +
        `when asked. 409 \`signature_name_taken\` (ignoring case); at most ${SIGNATURES_MAX} per address (422 ` +
        '`signature_limit_reached`); a narrowed credential writing outside its addresses: 422 `capability_unsupported`.',
      scope: 'settings:write',
      body: z.strictObject({
        address: signatureAddress,
        name: signatureName,
        html: signatureHtmlInput,
        isDefault: z.boolean().optional(),
        isReplyDefault: z.boolean().optional(),
      }),
      status: 201,
      response: signatureView,
      handler: async ({ credential, body, request }) => {
        const owner = await ownerOf(deps, credential, body.address, 'address');
        const { signatureId } = await createSignature(
          deps.commands,
          actorOf(credential, request.id),
          {
            ...owner,
            name: body.name,
            html: body.html,
            isDefault: body.isDefault,
            isReplyDefault: body.isReplyDefault,
          },
          new Date().toISOString(),
        );
        return reread(credential.workspaceId, signatureId);
      },
    }),

    operation({
      method: 'PATCH',
      url: '/signatures/:id',
      operationId: 'updateSignature',
      errors: ['resource_not_found', 'signature_name_taken'],
      summary: 'Update a signature',
      description:
        'Scope: `settings:write`. Omitted fields stay. `isDefault`/`isReplyDefault` true takes the place from the holder; ' +
        'false on the holder leaves the address without that default.',
      scope: 'settings:write',
      params: idParams,
      body: z.strictObject({
        name: signatureName.optional(),
        html: signatureHtmlInput.optional(),
        isDefault: z.boolean().optional(),
        isReplyDefault: z.boolean().optional(),
      }),
      response: signatureView,
      handler: async ({ credential, params, body, request }) => {
        const row = await signatureOr404(deps.db, credential.workspaceId, reachOf(credential), params.id);
        await updateSignature(
          deps.commands,
          actorOf(credential, request.id),
          { owner: row.owner, signatureId: row.id, ...body },
          new Date().toISOString(),
        );
        return reread(credential.workspaceId, row.id);
      },
    }),

    operation({
      method: 'PUT',
      url: '/signatures/defaults',
      operationId: 'setSignatureDefaults',
      errors: ['address_not_found', 'resource_not_found'],
      summary: "Set an address's default signatures",
      description:
        'Scope: `settings:write`. `defaultId` signs new mail, `replyDefaultId` replies and forwards; each a signature of ' +
        'that address (404 `resource_not_found` naming the field), or null for none; omitted ones stay.',
      scope: 'settings:write',
      body: z.strictObject({
        address: signatureAddress,
        defaultId: z.string().max(400).nullable().optional(),
        replyDefaultId: z.string().max(400).nullable().optional(),
      }),
      response: z.object({
        object: z.literal('signature_defaults'),
        address: z.string(),
        defaultId: z.string().nullable(),
        replyDefaultId: z.string().nullable(),
      }),
      handler: async ({ credential, body, request }) => {
        const owner = await ownerOf(deps, credential, body.address, 'address');
        const defaults = await setSignatureDefaults(
          deps.commands,
          actorOf(credential, request.id),
          { owner: owner.owner, defaultId: body.defaultId, replyDefaultId: body.replyDefaultId },
          new Date().toISOString(),
        );
        return { object: 'signature_defaults' as const, address: owner.address, ...defaults };
      },
    }),

    operation({
      method: 'POST',
      url: '/signatures/:id/copy',
      operationId: 'copySignature',
      errors: ['resource_not_found', 'address_not_found', 'signature_name_taken', 'signature_limit_reached'],
      summary: 'Copy a signature to other addresses',
      description:
        'Scope: `settings:write`. Its name and html, as a new signature of each address (the first there becomes both ' +
        'defaults). Every target is checked before any copy is made: 404 `address_not_found`, 409 `signature_name_taken`, ' +
        '422 `signature_limit_reached`, 422 `capability_unsupported`, each naming `addresses.<i>`.',
      scope: 'settings:write',
      params: idParams,
      body: z.strictObject({ addresses: z.array(signatureAddress).min(1).max(50) }),
      status: 201,
      response: pageSchema(signatureView),
      handler: async ({ credential, params, body, request }) => {
        const row = await signatureOr404(deps.db, credential.workspaceId, reachOf(credential), params.id);
        const targets = [];
        const seen = new Set<string>();
        for (const [i, address] of body.addresses.entries()) {
          if (seen.has(address)) continue;
          seen.add(address);
          const param = `addresses.${i}`;
          targets.push({ ...(await ownerOf(deps, credential, address, param)), param });
        }
        const ids = await copySignature(
          deps.commands,
          actorOf(credential, request.id),
          { name: row.name, html: row.html, targets },
          new Date().toISOString(),
        );
        const data = [];
        for (const id of ids) data.push(await reread(credential.workspaceId, id));
        return { object: 'list' as const, data, hasMore: false, nextCursor: null };
      },
    }),

    operation({
      method: 'DELETE',
      url: '/signatures/:id',
      operationId: 'deleteSignature',
      errors: ['resource_not_found'],
      summary: 'Delete a signature',
      description: 'Scope: `settings:write`. A deleted default leaves the address without that default.',
      scope: 'settings:write',
      params: idParams,
      response: z.object({ object: z.literal('signature'), id: z.string(), deleted: z.literal(true) }),
      handler: async ({ credential, params, request }) => {
        const row = await signatureOr404(deps.db, credential.workspaceId, reachOf(credential), params.id);
        await deleteSignature(
          deps.commands,
          actorOf(credential, request.id),
          { owner: row.owner, signatureId: row.id },
          new Date().toISOString(),
        );
        return { object: 'signature' as const, id: row.id, deleted: true as const };
      },
    }),

    operation({
      method: 'PUT',
      url: '/signatures/legacy',
      operationId: 'setLegacySignature',
      errors: ['address_not_found'],
      summary: "Set an address's single signature (legacy)",
      description:
        'Scope: `settings:write`. For clients of the single-signature model: sets the html of the signature that signs ' +
        'new mail; an address without one gets a signature named `Signature`, default for both when it is its first.',
      scope: 'settings:write',
      body: z.strictObject({ address: signatureAddress, html: signatureHtmlInput }),
      response: signatureView,
      handler: async ({ credential, body, request }) => {
        const owner = await ownerOf(deps, credential, body.address, 'address');
        const { signatureId } = await setLegacySignature(
          deps.commands,
          actorOf(credential, request.id),
          { ...owner, html: body.html },
          new Date().toISOString(),
        );
        return reread(credential.workspaceId, signatureId);
      },
    }),
  ];
};
