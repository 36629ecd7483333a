import { z } from 'zod';
import { createAddress, deleteAddress, updateAddress } from '../../../commands/addresses/handlers.ts';
import { idPatterns } from '../../../domain/shared/ids.ts';
import { listAddresses, type AddressRow } from '../../../projections/addresses/queries.ts';
import { findDomain, findDomainByName } from '../../../projections/domains/queries.ts';
import { actorOf } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { ApiError } from '../../errors/api-error.ts';
import { lookup } from '../../lookups.ts';
import { reachOf, requireReach } from '../../narrowing.ts';
import { cursorParam, limitParam, pageSchema } from '../../paging.ts';
import { operation, type Operation } from '../../route.ts';
import { timeZone } from '../../schemas.ts';
import {
  addressInput,
  addressListView,
  addressOr404,
  addressView,
  idParams,
  viewAddress,
  viewAddressRow,
} from './views.ts';

const domainOr404 = lookup(findDomain, {
  code: 'resource_not_found',
  message: 'No such domain.',
  param: 'id',
  pattern: idPatterns.domain,
});

const addressKey = (row: AddressRow): [string, string] => [row.address, row.id];
const pageQuery = z.strictObject({ limit: limitParam(), cursor: cursorParam });

export const addressOperations = (deps: ApiDeps): Operation[] => [
  operation({
    method: 'GET',
    url: '/addresses',
    operationId: 'listAddresses',
    errors: [],
    summary: 'List addresses',
    description:
      'Scope: `domains:read`. Every address of the workspace, alphabetical (byte order); without forwards and app passwords.',
    scope: 'domains:read',
    query: pageQuery,
    response: pageSchema(addressListView),
    handler: async ({ credential, query }) =>
      deps.cursors.list(credential.workspaceId, query, {
        name: 'addresses',
        rows: (after, limit) =>
          listAddresses(deps.db, credential.workspaceId, { reach: reachOf(credential) }, limit, after),
        key: addressKey,
        view: viewAddressRow,
      }),
  }),

  operation({
    method: 'GET',
    url: '/domains/:id/addresses',
    operationId: 'listDomainAddresses',
    errors: ['resource_not_found'],
    summary: "List a domain's addresses",
    description: 'Scope: `domains:read`. The addresses of one domain of the workspace, alphabetical (byte order).',
    scope: 'domains:read',
    params: idParams,
    query: pageQuery,
    response: pageSchema(addressListView),
    handler: async ({ credential, params, query }) => {
      const domain = await domainOr404(deps.db, credential.workspaceId, params.id);
      return deps.cursors.list(credential.workspaceId, query, {
        name: `domain-addresses:${domain.id}`,
        rows: (after, limit) =>
          listAddresses(
            deps.db,
            credential.workspaceId,
            { domain: domain.domain, reach: reachOf(credential) },
            limit,
            after,
          ),
        key: addressKey,
        view: viewAddressRow,
      });
    },
  }),

  operation({
    method: 'POST',
    url: '/addresses',
    operationId: 'createAddress',
    errors: [
      'unknown_domain',
      'address_reserved',
      'address_unavailable',
      'workspace_limit_reached',
      'capability_unsupported',
    ],
    summary: 'Create an address',
    description:
      'Scope: `domains:write`. On a domain of the workspace (422 `unknown_domain`); reserved local parts (postmaster, abuse, …) are 409 ' +
      '`address_reserved`, an address the workspace has is 409 `address_unavailable`; at most 1,000 per workspace (422 ' +
      '`workspace_limit_reached`). A catch-all is the domain’s `catchAll` setting, not an address.',
    scope: 'domains:write',
    body: z.strictObject({
      address: addressInput.describe('local part @ domain; lower-cased, the domain may be an IDN.'),
      enabled: z.boolean().default(true),
    }),
    status: 201,
    response: addressView,
    handler: async ({ credential, body, request }) => {
      const { address, localPart, domain } = body.address;
      const domainRow = await findDomainByName(deps.db, credential.workspaceId, domain);
      if (!domainRow) throw new ApiError('unknown_domain', `${domain} is not a domain of this workspace.`, 'address');
      requireReach(credential, address, 'creates only addresses its lists reach');
      const { addressId } = await createAddress(
        deps.commands,
        actorOf(credential, request.id),
        { address, localPart, domain, domainId: domainRow.id, enabled: body.enabled },
        new Date().toISOString(),
      );
      return viewAddress(deps, await addressOr404(deps.db, credential.workspaceId, null, addressId));
    },
  }),

  operation({
    method: 'GET',
    url: '/addresses/:id',
    operationId: 'getAddress',
    errors: ['resource_not_found'],
    summary: 'Read an address',
    description: 'Scope: `domains:read`. With its forwards and app passwords (never the passwords themselves).',
    scope: 'domains:read',
    params: idParams,
    response: addressView,
    handler: async ({ credential, params }) =>
      viewAddress(deps, await addressOr404(deps.db, credential.workspaceId, reachOf(credential), params.id)),
  }),

  operation({
    method: 'PATCH',
    url: '/addresses/:id',
    operationId: 'updateAddress',
    errors: ['resource_not_found'],
    stepUp: true,
    summary: 'Update an address',
    description:
      'Scope: `domains:write`. Omitted fields stay. `enabled`: a disabled address is kept, with its forwards and passwords. ' +
      '`timeZone`: the IANA zone its rules read `hour` and `weekday` in.',
    scope: 'domains:write',
    params: idParams,
    body: z.strictObject({ enabled: z.boolean().optional(), timeZone: timeZone.optional() }),
    response: addressView,
    handler: async ({ credential, params, body, request }) => {
      const row = await addressOr404(deps.db, credential.workspaceId, reachOf(credential), params.id);
      await updateAddress(deps.commands, actorOf(credential, request.id), row.id, body, new Date().toISOString());
      return viewAddress(deps, await addressOr404(deps.db, credential.workspaceId, null, row.id));
    },
  }),

  operation({
    method: 'DELETE',
    url: '/addresses/:id',
    operationId: 'deleteAddress',
    errors: ['resource_not_found'],
    stepUp: true,
    summary: 'Delete an address',
    description:
      'Scope: `domains:write`. Its forwards, login name and app passwords go with it; the address may be created again.',
    scope: 'domains:write',
    params: idParams,
    response: z.object({ object: z.literal('address'), id: z.string(), deleted: z.literal(true) }),
    handler: async ({ credential, params, request }) => {
      const row = await addressOr404(deps.db, credential.workspaceId, reachOf(credential), params.id);
      await deleteAddress(deps.commands, actorOf(credential, request.id), row.id, new Date().toISOString());
      return { object: 'address' as const, id: row.id, deleted: true as const };
    },
  }),
];
