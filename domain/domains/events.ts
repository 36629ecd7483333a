import { z } from 'zod';
import { defineEvent, type EventOf } from '../shared/events.ts';

const DMARC_POLICIES = ['none', 'quarantine', 'reject'] as const;
export const HOST_KINDS = ['tracking', 'storage'] as const;
export type HostKind = (typeof HOST_KINDS)[number];
/** A domain's own tracking or storage host: ours are used until its CNAME is seen (`active`). */
export const HOST_STATUSES = ['not_configured', 'pending', 'active', 'failed'] as const;
export type HostStatus = (typeof HOST_STATUSES)[number];
export const SENDING_STATUSES = ['verified', 'pending', 'failed', 'no_identity', 'unknown'] as const;

/**
 * The public half of a DKIM key and where the private half is: the secret vault, under `keyId`
 * (commands/domains/dkim.ts). The private key never goes into an event, which the audit replay prints.
 */
const dkimKey = z.object({ keyId: z.string(), selector: z.string(), publicKey: z.string() });

/** The settings a person changes with PATCH, whole after the change. */
export const domainSettings = z.object({
  catchAll: z.boolean(),
  /** The IANA zone the catch-all's rules read `hour` and `weekday` in. */
  catchAllTimeZone: z.string(),
  dmarcPolicy: z.enum(DMARC_POLICIES).nullable(),
  senderName: z.string().nullable(),
  logo: z.string().nullable(),
});
export type DomainSettings = z.infer<typeof domainSettings>;

export const DomainAdded = defineEvent(
  'DomainAdded',
  z.object({ domainId: z.string(), domain: z.string(), dkim: dkimKey, createdAt: z.string() }),
);

/** v2 added `catchAllTimeZone`: before it, every catch-all's zone was UTC. */
export const DomainSettingsUpdated = defineEvent(
  'DomainSettingsUpdated',
  z.object({ domainId: z.string(), ...domainSettings.shape, updatedAt: z.string() }),
  { version: 2, upcasters: { 1: (data) => ({ ...data, catchAllTimeZone: 'UTC' }) } },
);

/** A tracking or storage host set (pending until a check sees its CNAME) or taken away (null). */
export const DomainHostSet = defineEvent(
  'DomainHostSet',
  z.object({ domainId: z.string(), kind: z.enum(HOST_KINDS), host: z.string().nullable(), setAt: z.string() }),
);

/** A new key, to be published beside the one that signs; it signs once a check finds its record. */
export const DomainDkimKeyRotated = defineEvent(
  'DomainDkimKeyRotated',
  z.object({ domainId: z.string(), dkim: dkimKey, rotatedAt: z.string() }),
);

/** The rotated key's record was found: it signs from now on, and the key it replaces is dropped. */
export const DomainDkimKeyActivated = defineEvent(
  'DomainDkimKeyActivated',
  z.object({ domainId: z.string(), keyId: z.string(), previousKeyId: z.string(), activatedAt: z.string() }),
);

const checkedRecord = z.object({
  purpose: z.string(),
  name: z.string(),
  value: z.string(),
  status: z.enum(['found', 'missing']).nullable(),
  problem: z.string().nullable(),
});
export type CheckedRecordStatus = z.infer<typeof checkedRecord>;

const hostStanding = z.object({ status: z.enum(HOST_STATUSES), error: z.string().nullable() });

export const dmarcReportSchema = z.object({
  stage: z.enum(['none', 'monitoring', 'quarantine', 'reject']),
  record: z.string().nullable(),
  issues: z.array(z.object({ code: z.string(), message: z.string() })),
  alignmentPossible: z.boolean(),
  caveat: z.string().nullable(),
});

/**
 * What one look at DNS found, and where that leaves the domain. `trigger`: who asked (the verify
 * operation, a read of an unverified domain, or the background schedule).
 */
export const DomainChecked = defineEvent(
  'DomainChecked',
  z.object({
    domainId: z.string(),
    trigger: z.enum(['request', 'read', 'schedule']),
    checkedAt: z.string(),
    records: z.array(checkedRecord),
    receiving: z.object({ verifiedAt: z.string().nullable(), error: z.string().nullable() }),
    sending: z.object({ status: z.enum(SENDING_STATUSES), error: z.string().nullable() }),
    dmarc: dmarcReportSchema.nullable(),
    tracking: hostStanding,
    storage: hostStanding,
  }),
);

/** Receiving or sending became verified (`domain.verified`). */
export const DomainVerified = defineEvent(
  'DomainVerified',
  z.object({
    domainId: z.string(),
    domain: z.string(),
    receiving: z.boolean(),
    sending: z.boolean(),
    verifiedAt: z.string(),
  }),
);

/** Sending became `failed`: what is published is wrong, not merely missing (`domain.failed`). */
export const DomainVerificationFailed = defineEvent(
  'DomainVerificationFailed',
  z.object({ domainId: z.string(), domain: z.string(), error: z.string().nullable(), failedAt: z.string() }),
);

export const DomainDeleted = defineEvent(
  'DomainDeleted',
  z.object({ domainId: z.string(), domain: z.string(), deletedAt: z.string() }),
);

export const domainEvents = [
  DomainAdded,
  DomainSettingsUpdated,
  DomainHostSet,
  DomainDkimKeyRotated,
  DomainDkimKeyActivated,
  DomainChecked,
  DomainVerified,
  DomainVerificationFailed,
  DomainDeleted,
];
export type DomainEvent =
  | EventOf<typeof DomainAdded>
  | EventOf<typeof DomainSettingsUpdated>
  | EventOf<typeof DomainHostSet>
  | EventOf<typeof DomainDkimKeyRotated>
  | EventOf<typeof DomainDkimKeyActivated>
  | EventOf<typeof DomainChecked>
  | EventOf<typeof DomainVerified>
  | EventOf<typeof DomainVerificationFailed>
  | EventOf<typeof DomainDeleted>;

/** Every event type of a domain's stream. */

/** One stream per domain; the name's uniqueness across the service is held by domain-names. */
export const domainStream = (workspaceId: string, domainId: string) => `ws-${workspaceId}.domain-${domainId}`;
