import { z } from 'zod';
import { checkAddress } from '../../../domain/addresses/address.ts';
import { FORWARD_STATUSES } from '../../../domain/addresses/events.ts';
import { idPatterns } from '../../../domain/shared/ids.ts';
import { catchAllOf } from '../../../domain/addresses/address.ts';
import {
  addressesOfDomain,
  appPasswordsOf,
  findAddress,
  forwardsOf,
  type AddressRow,
  type AppPasswordRow,
  type ForwardRow,
} from '../../../projections/addresses/queries.ts';
import type { Credential } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { lookup } from '../../lookups.ts';
import { reaches, reachOf } from '../../narrowing.ts';

/** An address as a request names it, checked and normalised (domain/addresses/address.ts). */
export const addressInput = z
  .string()
  .max(320)
  .transform((value, ctx) => {
    const checked = checkAddress(value);
    if (!checked.ok) {
      ctx.addIssue({ code: 'custom', message: checked.reason });
      return z.NEVER;
    }
    return checked;
  });

export const forwardView = z.object({
  object: z.literal('address_forward'),
  id: z.string(),
  destination: z.string(),
  status: z
    .enum(FORWARD_STATUSES)
    .describe(
      '`pending` until the destination allows it through the link mailed to it; only `confirmed` forwards deliver.',
    ),
  enabled: z.boolean(),
  keepCopy: z.boolean().describe('The address keeps its own copy of what it forwards.'),
  consentRequestedAt: z.string().nullable(),
  answeredAt: z.string().nullable(),
  createdAt: z.string(),
});

export const appPasswordView = z.object({
  object: z.literal('app_password'),
  id: z.string(),
  name: z.string(),
  createdAt: z.string(),
});

const addressFields = {
  object: z.literal('address'),
  id: z.string(),
  address: z.string(),
  localPart: z.string(),
  domain: z.string(),
  domainId: z.string(),
  enabled: z
    .boolean()
    .describe('Stored and shown; sending (409 `address_disabled`) and receiving (bounces) honour it once they exist.'),
  timeZone: z.string().describe('The IANA zone the address’s rules read `hour` and `weekday` in; `UTC` until set.'),
  login: z.object({
    username: z.string().describe('What SMTP clients log in with: a custom name, or the address itself.'),
  }),
  createdAt: z.string(),
  updatedAt: z.string(),
};

/** The address as lists show it. */
export const addressListView = z.object(addressFields);
/** The address as a single read shows it: with its forwards and app passwords (never the passwords). */
export const addressView = z.object({
  ...addressFields,
  forwards: z.array(forwardView),
  appPasswords: z.array(appPasswordView),
});

export function viewAddressRow(row: AddressRow): z.infer<typeof addressListView> {
  return {
    object: 'address',
    id: row.id,
    address: row.address,
    localPart: row.local_part,
    domain: row.domain,
    domainId: row.domain_id,
    enabled: row.enabled,
    timeZone: row.time_zone,
    login: { username: row.username ?? row.address },
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

export function viewForward(row: ForwardRow): z.infer<typeof forwardView> {
  return {
    object: 'address_forward',
    id: row.id,
    destination: row.destination,
    status: row.status,
    enabled: row.enabled,
    keepCopy: row.keep_copy,
    consentRequestedAt: row.consent_requested_at?.toISOString() ?? null,
    answeredAt: row.answered_at?.toISOString() ?? null,
    createdAt: row.created_at.toISOString(),
  };
}

export const viewAppPassword = (row: AppPasswordRow): z.infer<typeof appPasswordView> => ({
  object: 'app_password',
  id: row.id,
  name: row.name,
  createdAt: row.created_at.toISOString(),
});

export async function viewAddress(deps: ApiDeps, row: AddressRow): Promise<z.infer<typeof addressView>> {
  const [forwards, appPasswords] = await Promise.all([
    forwardsOf(deps.db, [row.id]),
    appPasswordsOf(deps.db, [row.id]),
  ]);
  return {
    ...viewAddressRow(row),
    forwards: forwards.map(viewForward),
    appPasswords: appPasswords.map(viewAppPassword),
  };
}

/** An address of the workspace the caller reaches, by id; 404 otherwise, foreign and unreached alike. */
export const addressOr404 = lookup(findAddress, {
  code: 'resource_not_found',
  message: 'No such address.',
  param: 'id',
  pattern: idPatterns.address,
});

export const idParams = z.strictObject({ id: z.string().max(400) });

/**
 * A domain's `addresses` as its single read shows them: every address on it the caller reaches,
 * disabled ones included, alphabetical; `*@<domain>` first (it sorts first) while `catchAll` is
 * on, for a caller that reaches the whole domain.
 */
export async function addressesOnDomain(
  deps: Pick<ApiDeps, 'db'>,
  credential: Credential,
  domain: { id: string; domain: string; catch_all: boolean },
): Promise<{ address: string; enabled: boolean }[]> {
  const rows = await addressesOfDomain(deps.db, credential.workspaceId, domain.id, reachOf(credential));
  const catchAll = catchAllOf(domain.domain);
  return domain.catch_all && reaches(credential, catchAll) ? [{ address: catchAll, enabled: true }, ...rows] : rows;
}
