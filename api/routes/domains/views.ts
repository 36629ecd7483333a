import { z } from 'zod';
import { dmarcReportSchema, HOST_STATUSES, SENDING_STATUSES, type HostKind } from '../../../domain/domains/events.ts';
import { requiredRecords, type MailHosts, type RequiredRecord } from '../../../domain/domains/records.ts';
import { canSend } from '../../../domain/domains/sending.ts';
import { idPatterns } from '../../../domain/shared/ids.ts';
import { findDomain, sendingStandingOf, type DomainRow } from '../../../projections/domains/queries.ts';
import { lookup } from '../../lookups.ts';

export const idParams = z.object({ id: z.string() });

const recordView = z.object({
  type: z.enum(['MX', 'TXT', 'CNAME']),
  name: z.string(),
  value: z.string(),
  priority: z.number().int().nullable().describe('MX only.'),
  purpose: z.enum(['receiving', 'spf', 'dkim', 'dmarc', 'return_path', 'tracking', 'storage']),
  status: z
    .enum(['found', 'missing'])
    .nullable()
    .describe('null: not checked yet, or DNS did not answer at the last check.'),
});
type RecordView = z.infer<typeof recordView>;

const hostView = z.object({
  status: z
    .enum(HOST_STATUSES)
    .describe(
      'Only `active` puts the host to use; `not_configured` (no host) and `pending` (record not seen yet) are ours.',
    ),
  host: z.string().nullable(),
  record: recordView.nullable().describe('The CNAME the host needs; null without a host.'),
  error: z.string().nullable(),
});

export const domainView = z.object({
  object: z.literal('domain'),
  id: z.string(),
  domain: z.string().describe('Lower-case; an IDN in punycode.'),
  receiving: z.object({
    verified: z.boolean(),
    verifiedAt: z.string().nullable(),
    catchAll: z.boolean(),
    catchAllTimeZone: z.string().describe('The IANA zone the catch-all’s rules read `hour` and `weekday` in.'),
    lastCheckedAt: z.string().nullable(),
    error: z.string().nullable(),
  }),
  sending: z.object({
    status: z.enum(SENDING_STATUSES),
    canSend: z
      .boolean()
      .describe('A negative verdict older than a day counts as unknown: true while status is `pending` can happen.'),
    checkedAt: z.string().nullable(),
    error: z.string().nullable(),
  }),
  tracking: hostView,
  storage: hostView,
  logo: z.string().nullable(),
  dmarcPolicy: z.enum(['none', 'quarantine', 'reject']).nullable(),
  senderName: z.string().nullable(),
  createdAt: z.string(),
});

export const domainDetailView = domainView.extend({
  addresses: z.array(z.object({ address: z.string(), enabled: z.boolean() })).describe('Disabled ones included.'),
  records: z.array(recordView),
  dmarc: dmarcReportSchema.nullable().describe('null until the domain has been verified for sending.'),
});

export type DomainView = z.infer<typeof domainView>;
export type DomainDetailView = z.infer<typeof domainDetailView>;

const iso = (d: Date | null) => d?.toISOString() ?? null;

/** The records the domain publishes now, each with what the last check found for that very name and value. */
function recordsOf(row: DomainRow, hosts: MailHosts): RecordView[] {
  const key = row.pending_dkim_key_id
    ? { selector: row.pending_dkim_selector!, publicKey: row.pending_dkim_public_key! }
    : { selector: row.dkim_selector, publicKey: row.dkim_public_key };
  const records = requiredRecords({
    domain: row.domain,
    hosts,
    dkim: key,
    dmarcPolicy: row.dmarc_policy,
    trackingHost: row.tracking_host,
    storageHost: row.storage_host,
  });
  const checked = row.checked_records;
  return records.map((r: RequiredRecord) => ({
    ...r,
    status: checked.find((c) => c.purpose === r.purpose && c.name === r.name && c.value === r.value)?.status ?? null,
  }));
}

function hostOf(row: DomainRow, kind: HostKind, records: RecordView[]): z.infer<typeof hostView> {
  const [host, status, error] =
    kind === 'tracking'
      ? [row.tracking_host, row.tracking_status, row.tracking_error]
      : [row.storage_host, row.storage_status, row.storage_error];
  return { status, host, record: records.find((r) => r.purpose === kind) ?? null, error };
}

export function viewDomain(row: DomainRow, hosts: MailHosts, now = new Date()): DomainView {
  const records = recordsOf(row, hosts);
  return {
    object: 'domain',
    id: row.id,
    domain: row.domain,
    receiving: {
      verified: row.receiving_verified_at !== null,
      verifiedAt: iso(row.receiving_verified_at),
      catchAll: row.catch_all,
      catchAllTimeZone: row.catch_all_time_zone,
      lastCheckedAt: iso(row.last_checked_at),
      error: row.receiving_error,
    },
    sending: {
      status: row.sending_status,
      canSend: canSend(sendingStandingOf(row), now.toISOString()),
      checkedAt: iso(row.last_checked_at),
      error: row.sending_error,
    },
    tracking: hostOf(row, 'tracking', records),
    storage: hostOf(row, 'storage', records),
    logo: row.logo,
    dmarcPolicy: row.dmarc_policy,
    senderName: row.sender_name,
    createdAt: row.created_at.toISOString(),
  };
}

/**
 * The single read. `addresses` comes from the addresses read model (`addressesOnDomain`,
 * api/routes/addresses/views.ts); a domain just added has none.
 */
export function viewDomainDetail(
  row: DomainRow,
  hosts: MailHosts,
  addresses: { address: string; enabled: boolean }[],
  now = new Date(),
): DomainDetailView {
  return {
    ...viewDomain(row, hosts, now),
    addresses,
    records: recordsOf(row, hosts),
    dmarc: row.ever_verified ? row.dmarc : null,
  };
}

/** A domain of the caller's workspace by id; a name, a malformed id or another workspace's id is 404. */
export const domainOr404 = lookup(findDomain, {
  code: 'resource_not_found',
  message: 'No such domain.',
  param: 'id',
  pattern: idPatterns.domain,
});
