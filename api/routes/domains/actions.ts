import { checkDomainRecords } from '../../../commands/domains/check.ts';
import { rotateDkimKey } from '../../../commands/domains/handlers.ts';
import { actorOf } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { operation, type Operation } from '../../route.ts';
import { domainWithinLists } from './operations.ts';
import { addressesOnDomain } from '../addresses/views.ts';
import { domainDetailView, domainOr404, idParams, viewDomainDetail } from './views.ts';

export const domainActions = (deps: ApiDeps): Operation[] => [
  operation({
    method: 'POST',
    url: '/domains/:id/verify',
    operationId: 'verifyDomain',
    errors: ['resource_not_found'],
    // Looking at DNS changes no configuration: test keys may ask too.
    openToTestKeys: true,
    summary: 'Verify a domain',
    description:
      'Scope: `domains:write`. Looks every record up in DNS now and answers the domain as that leaves it. A record DNS ' +
      'did not answer for (SERVFAIL, timeout) reads `status: null`, and sending `unknown`.',
    scope: 'domains:write',
    params: idParams,
    response: domainDetailView,
    handler: async ({ credential, params, request }) => {
      const row = await domainWithinLists(deps, credential, params.id);
      await checkDomainRecords(deps.commands, deps.domains, actorOf(credential, request.id), row.id, 'request');
      const updated = await domainOr404(deps.db, credential.workspaceId, row.id);
      return viewDomainDetail(updated, deps.domains.hosts, await addressesOnDomain(deps, credential, updated));
    },
  }),

  operation({
    method: 'POST',
    url: '/domains/:id/dkim/rotate',
    operationId: 'rotateDomainDkimKey',
    errors: ['resource_not_found'],
    summary: "Rotate a domain's DKIM key",
    description:
      'Scope: `domains:write`. A new 2048-bit key under a new selector: `records` then show its DKIM record to publish. ' +
      'The current key signs until a check finds the new record; then the new one signs and the old one is destroyed.',
    scope: 'domains:write',
    params: idParams,
    response: domainDetailView,
    handler: async ({ credential, params, request }) => {
      const row = await domainWithinLists(deps, credential, params.id);
      await rotateDkimKey(
        deps.commands,
        deps.domains,
        actorOf(credential, request.id),
        row.id,
        new Date().toISOString(),
      );
      const updated = await domainOr404(deps.db, credential.workspaceId, row.id);
      return viewDomainDetail(updated, deps.domains.hosts, await addressesOnDomain(deps, credential, updated));
    },
  }),
];
