import { z } from 'zod';
import { defineEvent, type EventOf } from '../shared/events.ts';

/** `html` is sanitised (commands/signatures/html.ts); the flags say whether it took either default's place. */
export const SignatureCreated = defineEvent(
  'SignatureCreated',
  z.object({
    signatureId: z.string(),
    owner: z.string(),
    address: z.string(),
    name: z.string(),
    html: z.string(),
    isDefault: z.boolean(),
    isReplyDefault: z.boolean(),
    createdAt: z.string(),
  }),
);

/** Name and html as they stand after the change. */
export const SignatureUpdated = defineEvent(
  'SignatureUpdated',
  z.object({ signatureId: z.string(), name: z.string(), html: z.string(), updatedAt: z.string() }),
);

/** Which signatures of the address hold the two defaults after the change (null: none). */
export const SignatureDefaultsChanged = defineEvent(
  'SignatureDefaultsChanged',
  z.object({
    owner: z.string(),
    defaultId: z.string().nullable(),
    replyDefaultId: z.string().nullable(),
    changedAt: z.string(),
  }),
);

export const SignatureDeleted = defineEvent(
  'SignatureDeleted',
  z.object({ signatureId: z.string(), owner: z.string(), deletedAt: z.string() }),
);

export const signatureEvents = [SignatureCreated, SignatureUpdated, SignatureDefaultsChanged, SignatureDeleted];
export type SignatureEvent =
  | EventOf<typeof SignatureCreated>
  | EventOf<typeof SignatureUpdated>
  | EventOf<typeof SignatureDefaultsChanged>
  | EventOf<typeof SignatureDeleted>;

/**
 * Every signature of one address is one aggregate: the name's uniqueness ignoring case, the limit
 * of 50 and the two defaults are decided on one stream, so concurrent creates have one winner.
 */
export const signaturesStream = (workspaceId: string, owner: string) => `ws-${workspaceId}.signatures-${owner}`;
