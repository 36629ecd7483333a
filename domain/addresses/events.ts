import { z } from 'zod';
import { defineEvent, type EventOf } from '../shared/events.ts';

export const FORWARD_STATUSES = ['pending', 'confirmed', 'declined'] as const;
export type ForwardStatus = (typeof FORWARD_STATUSES)[number];

export const AddressCreated = defineEvent(
  'AddressCreated',
  z.object({
    addressId: z.string(),
    address: z.string(),
    localPart: z.string(),
    domain: z.string(),
    domainId: z.string(),
    enabled: z.boolean(),
    createdAt: z.string(),
  }),
);

/** `enabled` as it stands after the change. */
export const AddressUpdated = defineEvent(
  'AddressUpdated',
  z.object({ addressId: z.string(), enabled: z.boolean(), updatedAt: z.string() }),
);

/**
 * The IANA zone rule conditions on `hour` and `weekday` read the address's mail in (UTC until set;
 * docs/decisions/addresses.md).
 */
export const AddressTimeZoneSet = defineEvent(
  'AddressTimeZoneSet',
  z.object({ addressId: z.string(), timeZone: z.string(), setAt: z.string() }),
);

export const AddressDeleted = defineEvent(
  'AddressDeleted',
  z.object({ addressId: z.string(), address: z.string(), deletedAt: z.string() }),
);

/**
 * A forward to `destination`. Outside the workspace's domains it starts `pending`, with the
 * consent link's nonce (not a secret: the link also carries a MAC of it under a server key, see
 * commands/addresses/consent.ts); on a domain of the workspace it is `confirmed` at once.
 */
export const AddressForwardAdded = defineEvent(
  'AddressForwardAdded',
  z.object({
    addressId: z.string(),
    forwardId: z.string(),
    destination: z.string(),
    status: z.enum(['pending', 'confirmed']),
    keepCopy: z.boolean(),
    nonce: z.string().nullable(),
    addedAt: z.string(),
  }),
);

export const AddressForwardUpdated = defineEvent(
  'AddressForwardUpdated',
  z.object({
    addressId: z.string(),
    forwardId: z.string(),
    enabled: z.boolean(),
    keepCopy: z.boolean(),
    updatedAt: z.string(),
  }),
);

export const AddressForwardRemoved = defineEvent(
  'AddressForwardRemoved',
  z.object({ addressId: z.string(), forwardId: z.string(), removedAt: z.string() }),
);

/** A new consent link (the old one stops working), mailed again; a declined forward is pending again. */
export const AddressForwardConsentRequested = defineEvent(
  'AddressForwardConsentRequested',
  z.object({ addressId: z.string(), forwardId: z.string(), nonce: z.string(), requestedAt: z.string() }),
);

/** The destination answered the consent link. */
export const AddressForwardAnswered = defineEvent(
  'AddressForwardAnswered',
  z.object({
    addressId: z.string(),
    forwardId: z.string(),
    status: z.enum(['confirmed', 'declined']),
    answeredAt: z.string(),
  }),
);

/** The login name SMTP clients use: `username`, or the address itself when null. */
export const AddressLoginSet = defineEvent(
  'AddressLoginSet',
  z.object({ addressId: z.string(), username: z.string().nullable(), setAt: z.string() }),
);

/** `passwordHash` is scrypt's (commands/addresses/passwords.ts); the audit replay redacts it. */
export const AppPasswordCreated = defineEvent(
  'AppPasswordCreated',
  z.object({
    addressId: z.string(),
    appPasswordId: z.string(),
    name: z.string(),
    passwordHash: z.string(),
    createdAt: z.string(),
  }),
);

export const AppPasswordRevoked = defineEvent(
  'AppPasswordRevoked',
  z.object({ addressId: z.string(), appPasswordId: z.string(), revokedAt: z.string() }),
);

export const addressEvents = [
  AddressCreated,
  AddressUpdated,
  AddressTimeZoneSet,
  AddressDeleted,
  AddressForwardAdded,
  AddressForwardUpdated,
  AddressForwardRemoved,
  AddressForwardConsentRequested,
  AddressForwardAnswered,
  AddressLoginSet,
  AppPasswordCreated,
  AppPasswordRevoked,
];
export type AddressEvent =
  | EventOf<typeof AddressCreated>
  | EventOf<typeof AddressUpdated>
  | EventOf<typeof AddressTimeZoneSet>
  | EventOf<typeof AddressDeleted>
  | EventOf<typeof AddressForwardAdded>
  | EventOf<typeof AddressForwardUpdated>
  | EventOf<typeof AddressForwardRemoved>
  | EventOf<typeof AddressForwardConsentRequested>
  | EventOf<typeof AddressForwardAnswered>
  | EventOf<typeof AddressLoginSet>
  | EventOf<typeof AppPasswordCreated>
  | EventOf<typeof AppPasswordRevoked>;

/** One stream per address: its settings, forwards, login and app passwords. */
export const addressStream = (workspaceId: string, addressId: string) => `ws-${workspaceId}.address-${addressId}`;
