import { z } from 'zod';
import {
  addForwards,
  removeForward,
  resendForwardConsent,
  updateForward,
} from '../../../commands/addresses/handlers.ts';
import { FORWARDS_MAX } from '../../../domain/addresses/decide.ts';
import { domainOf } from '../../../domain/shared/allowlists.ts';
import { forwardsOf } from '../../../projections/addresses/queries.ts';
import { findDomainByName } from '../../../projections/domains/queries.ts';
import { actorOf } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { ApiError } from '../../errors/api-error.ts';
import { reachOf } from '../../narrowing.ts';
import { operation, type Operation } from '../../route.ts';
import { addressOr404, addressView, forwardView, viewAddress, viewForward } from './views.ts';

const forwardParams = z.strictObject({ id: z.string().max(400), forwardId: z.string().max(400) });
const destination = z.email().max(254).trim().toLowerCase();

async function forwardOf(deps: ApiDeps, addressId: string, forwardId: string) {
  const forward = (await forwardsOf(deps.db, [addressId])).find((f) => f.id === forwardId);
  if (!forward) throw new ApiError('resource_not_found', 'No such forward of this address.', 'forwardId');
  return forward;
}

export const forwardOperations = (deps: ApiDeps): Operation[] => [
  operation({
    method: 'POST',
    url: '/addresses/:id/forwards',
    operationId: 'addAddressForwards',
    errors: ['resource_not_found', 'workspace_limit_reached', 'forward_consent_rate_limited'],
    stepUp: true,
    summary: 'Add forwards (addAddressForwards)',
    description:
      'Scope: `domains:write`. A destination on a domain of the workspace is `confirmed` at once; any other is `pending` until it ' +
      'allows it through a link mailed to it, and only confirmed forwards deliver. A destination forwarded to already stays as it is. ' +
      `At most ${FORWARDS_MAX} per address (422 \`workspace_limit_reached\`). Each destination receives at most 5 consent mails in 24 hours, ` +
      'from all workspaces together (429 `forward_consent_rate_limited` with Retry-After; `param` names the destination).',
    scope: 'domains:write',
    params: z.strictObject({ id: z.string().max(400) }),
    body: z.strictObject({
      destinations: z.array(destination).min(1).max(FORWARDS_MAX),
      keepCopy: z.boolean().default(true),
    }),
    response: addressView,
    handler: async ({ credential, params, body, request }) => {
      const row = await addressOr404(deps.db, credential.workspaceId, reachOf(credential), params.id);
      const destinations: { destination: string; inside: boolean }[] = [];
      for (const d of body.destinations) {
        const inside = (await findDomainByName(deps.db, credential.workspaceId, domainOf(d))) !== undefined;
        destinations.push({ destination: d, inside });
      }
      await addForwards(
        deps.commands,
        actorOf(credential, request.id),
        row.id,
        { destinations, keepCopy: body.keepCopy },
        new Date().toISOString(),
      );
      return viewAddress(deps, await addressOr404(deps.db, credential.workspaceId, null, row.id));
    },
  }),

  operation({
    method: 'PATCH',
    url: '/addresses/:id/forwards/:forwardId',
    operationId: 'updateAddressForward',
    errors: ['resource_not_found'],
    stepUp: true,
    summary: 'Update a forward (updateAddressForward)',
    description:
      'Scope: `domains:write`. `enabled` pauses or resumes it; `keepCopy` whether the address keeps its own copy.',
    scope: 'domains:write',
    params: forwardParams,
    body: z.strictObject({ enabled: z.boolean().optional(), keepCopy: z.boolean().optional() }),
    response: forwardView,
    handler: async ({ credential, params, body, request }) => {
      const row = await addressOr404(deps.db, credential.workspaceId, reachOf(credential), params.id);
      await forwardOf(deps, row.id, params.forwardId);
      await updateForward(
        deps.commands,
        actorOf(credential, request.id),
        row.id,
        { forwardId: params.forwardId, ...body },
        new Date().toISOString(),
      );
      return viewForward(await forwardOf(deps, row.id, params.forwardId));
    },
  }),

  operation({
    method: 'DELETE',
    url: '/addresses/:id/forwards/:forwardId',
    operationId: 'deleteAddressForward',
    errors: ['resource_not_found'],
    stepUp: true,
    summary: 'Delete a forward (deleteAddressForward)',
    description: 'Scope: `domains:write`. A consent link still out stops working.',
    scope: 'domains:write',
    params: forwardParams,
    response: z.object({ object: z.literal('address_forward'), id: z.string(), deleted: z.literal(true) }),
    handler: async ({ credential, params, request }) => {
      const row = await addressOr404(deps.db, credential.workspaceId, reachOf(credential), params.id);
      await forwardOf(deps, row.id, params.forwardId);
      await removeForward(
        deps.commands,
        actorOf(credential, request.id),
        row.id,
        params.forwardId,
        new Date().toISOString(),
      );
      return { object: 'address_forward' as const, id: params.forwardId, deleted: true as const };
    },
  }),

  operation({
    method: 'POST',
    url: '/addresses/:id/forwards/:forwardId/resend-consent',
    operationId: 'resendAddressForwardConsent',
    errors: ['resource_not_found', 'forward_consent_rate_limited'],
    stepUp: true,
    summary: 'Mail the consent link again (resendAddressForwardConsent)',
    description:
      'Scope: `domains:write`. A new link for a pending or declined forward (the earlier ones stop working), within the ' +
      'destination’s 5 consent mails a day (429 `forward_consent_rate_limited`); a confirmed forward needs none and is answered as it is.',
    scope: 'domains:write',
    params: forwardParams,
    response: forwardView,
    handler: async ({ credential, params, request }) => {
      const row = await addressOr404(deps.db, credential.workspaceId, reachOf(credential), params.id);
      await forwardOf(deps, row.id, params.forwardId);
      await resendForwardConsent(
        deps.commands,
        actorOf(credential, request.id),
        row.id,
        params.forwardId,
        new Date().toISOString(),
      );
      return viewForward(await forwardOf(deps, row.id, params.forwardId));
    },
  }),
];
