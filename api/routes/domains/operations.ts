import { z } from 'zod';
import { addDomain, deleteDomain, updateDomain } from '../../../commands/domains/handlers.ts';
import { recheckForRead } from '../../../commands/domains/check.ts';
import { checkDomainName } from '../../../domain/domains/name.ts';
import { recheckOnRead } from '../../../domain/domains/rechecks.ts';
import { listDomains, type DomainRow } from '../../../projections/domains/queries.ts';
import { actorOf, type Credential } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { requireWithinLists } from '../../narrowing.ts';
import { cursorParam, limitParam, pageSchema } from '../../paging.ts';
import { operation, type Operation } from '../../route.ts';
import { text, timeZone } from '../../schemas.ts';
import { addressesOnDomain } from '../addresses/views.ts';
import { domainDetailView, domainOr404, domainView, idParams, viewDomain, viewDomainDetail } from './views.ts';

/** The name as a domain is stored (lower-case, punycode), refused with the reason otherwise. */
const domainNameInput = z
  .string()
  .max(300)
  .transform((value, ctx) => {
    const checked = checkDomainName(value);
    if (checked.ok) return checked.domain;
    ctx.addIssue({ code: 'custom', message: checked.reason });
    return z.NEVER;
  })
  .describe(
    'Trimmed, lower-cased, an IDN turned to punycode; under a public suffix and not one itself; not an IP address.',
  );

const hostInput = z
  .strictObject({
    host: z
      .string()
      .max(253)
      .nullable()
      .describe('A name under the domain (such as `links.<domain>`); null to use ours again.'),
  })
  .optional();

/** The domain a change reaches: a narrowed credential changes only domains its own lists hold. */
export async function domainWithinLists(deps: ApiDeps, credential: Credential, id: string): Promise<DomainRow> {
  const row = await domainOr404(deps.db, credential.workspaceId, id);
  requireWithinLists(credential, { addressAllowlist: null, domainAllowlist: [row.domain] });
  return row;
}

/** The single read, with a DNS re-check first when the domain is unverified and its last check over 20 s old. */
export async function readDomain(deps: ApiDeps, credential: Credential, id: string, requestId: string) {
  let row = await domainOr404(deps.db, credential.workspaceId, id);
  const standing = {
    receivingVerified: row.receiving_verified_at !== null,
    sendingStatus: row.sending_status,
    lastCheckedAt: row.last_checked_at?.toISOString() ?? null,
  };
  if (recheckOnRead(standing, new Date().toISOString())) {
    await recheckForRead(deps.commands, deps.domains, actorOf(credential, requestId), row.id);
    row = await domainOr404(deps.db, credential.workspaceId, id);
  }
  return viewDomainDetail(row, deps.domains.hosts, await addressesOnDomain(deps, credential, row));
}

export const domainOperations = (deps: ApiDeps): Operation[] => [
  operation({
    method: 'GET',
    url: '/domains',
    operationId: 'listDomains',
    summary: 'List domains',
    description:
      'Scope: `domains:read`. Alphabetical by domain (punycode, byte order). Rows without `addresses`, `records` and `dmarc`.',
    scope: 'domains:read',
    query: z.strictObject({ limit: limitParam(), cursor: cursorParam }),
    response: pageSchema(domainView),
    handler: async ({ credential, query }) => {
      const now = new Date();
      return deps.cursors.list(credential.workspaceId, query, {
        name: 'domains',
        rows: (after: [string, string] | null, limit: number) =>
          listDomains(deps.db, credential.workspaceId, limit, after),
        key: (row): [string, string] => [row.domain, row.id],
        view: (row) => viewDomain(row, deps.domains.hosts, now),
      });
    },
  }),

  operation({
    method: 'POST',
    url: '/domains',
    operationId: 'createDomain',
    errors: ['domain_in_use'],
    summary: 'Add a domain',
    description:
      'Scope: `domains:write`. Makes its 2048-bit RSA DKIM key (the private half is never shown). A name is one ' +
      "workspace's at a time across the service: 409 `domain_in_use` when it is taken (here or elsewhere).",
    scope: 'domains:write',
    body: z.strictObject({ domain: domainNameInput }),
    status: 201,
    response: domainDetailView,
    handler: async ({ credential, body, request }) => {
      requireWithinLists(credential, { addressAllowlist: null, domainAllowlist: [body.domain] });
      const domainId = await addDomain(
        deps.commands,
        deps.domains,
        actorOf(credential, request.id),
        { domain: body.domain },
        new Date().toISOString(),
      );
      const row = await domainOr404(deps.db, credential.workspaceId, domainId);
      return viewDomainDetail(row, deps.domains.hosts, []);
    },
  }),

  operation({
    method: 'GET',
    url: '/domains/:id',
    operationId: 'getDomain',
    errors: ['resource_not_found'],
    summary: 'Read a domain',
    description:
      'Scope: `domains:read`. With `addresses`, `records` and `dmarc`. An unverified domain (receiving or sending) whose ' +
      'last check is over 20 seconds old is checked in DNS first. The id must be a domain id of this workspace.',
    scope: 'domains:read',
    params: idParams,
    response: domainDetailView,
    handler: async ({ credential, params, request }) => readDomain(deps, credential, params.id, request.id),
  }),

  operation({
    method: 'PATCH',
    url: '/domains/:id',
    operationId: 'updateDomain',
    errors: ['resource_not_found', 'tracking_host_in_use', 'storage_host_in_use'],
    summary: 'Update a domain',
    description:
      'Scope: `domains:write`. Omitted fields stay. A tracking or storage host is a name under the domain, pending until ' +
      'its CNAME is seen; a host another domain uses is 409 `tracking_host_in_use` (`storage_host_in_use`).',
    scope: 'domains:write',
    params: idParams,
    body: z.strictObject({
      catchAll: z.boolean().optional().describe('Mail to addresses the domain does not have goes to `*@<domain>`.'),
      catchAllTimeZone: timeZone
        .optional()
        .describe(
          'The catch-all’s time zone, for its rules’ `hour` and `weekday`: an IANA name or `UTC` (the default).',
        ),
      dmarcPolicy: z
        .enum(['none', 'quarantine', 'reject'])
        .nullable()
        .optional()
        .describe('The policy our recommended DMARC record carries; null: `none`.'),
      senderName: text(200).pipe(z.string().min(1)).nullable().optional(),
      logo: z
        .url({ protocol: /^https$/ })
        .max(2048)
        .nullable()
        .optional()
        .describe('An https URL of the logo shown with mail from the domain.'),
      tracking: hostInput,
      storage: hostInput,
    }),
    response: domainDetailView,
    handler: async ({ credential, params, body, request }) => {
      const row = await domainWithinLists(deps, credential, params.id);
      const { tracking, storage, ...settings } = body;
      await updateDomain(
        deps.commands,
        actorOf(credential, request.id),
        row.id,
        {
          settings,
          hosts: {
            ...(tracking !== undefined ? { tracking: tracking.host } : {}),
            ...(storage !== undefined ? { storage: storage.host } : {}),
          },
        },
        new Date().toISOString(),
      );
      const updated = await domainOr404(deps.db, credential.workspaceId, row.id);
      return viewDomainDetail(updated, deps.domains.hosts, await addressesOnDomain(deps, credential, updated));
    },
  }),

  operation({
    method: 'DELETE',
    url: '/domains/:id',
    operationId: 'deleteDomain',
    errors: ['resource_not_found', 'domain_has_addresses'],
    stepUp: true,
    summary: 'Delete a domain',
    description:
      'Scope: `domains:write`. Frees the name (and its hosts) for any workspace; its DKIM keys are destroyed. Fires `domain.deleted`.',
    scope: 'domains:write',
    params: idParams,
    response: z.object({ object: z.literal('domain'), id: z.string(), deleted: z.literal(true) }),
    handler: async ({ credential, params, request }) => {
      const row = await domainWithinLists(deps, credential, params.id);
      await deleteDomain(
        deps.commands,
        deps.domains,
        actorOf(credential, request.id),
        row.id,
        new Date().toISOString(),
      );
      return { object: 'domain' as const, id: row.id, deleted: true as const };
    },
  }),
];
