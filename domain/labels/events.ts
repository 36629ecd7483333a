import { z } from 'zod';
import { defineEvent, type EventOf } from '../shared/events.ts';

/**
 * Custom labels of one mailbox (an address, or a domain's catch-all). `owner` names the mailbox
 * by ids that are never reused (`mailboxOwnerOf`, domain/shared/mailbox-owners.ts), `address` as it is shown and narrowed by.
 */
export const LabelCreated = defineEvent(
  'LabelCreated',
  z.object({
    labelId: z.string(),
    owner: z.string(),
    address: z.string(),
    name: z.string(),
    color: z.string().nullable(),
    createdAt: z.string(),
  }),
);

/** Name and colour as they stand after the change. */
export const LabelUpdated = defineEvent(
  'LabelUpdated',
  z.object({ labelId: z.string(), name: z.string(), color: z.string().nullable(), updatedAt: z.string() }),
);

/** The label leaves every thread that carried it (the threads read model drops it in log order). */
export const LabelDeleted = defineEvent(
  'LabelDeleted',
  z.object({ labelId: z.string(), owner: z.string(), deletedAt: z.string() }),
);

export const labelEvents = [LabelCreated, LabelUpdated, LabelDeleted];
export type LabelEvent = EventOf<typeof LabelCreated> | EventOf<typeof LabelUpdated> | EventOf<typeof LabelDeleted>;

/**
 * Every label of one mailbox is one aggregate: the name's uniqueness ignoring case and the limit
 * are decided on one stream, so concurrent creates have one winner.
 */
export const labelsStream = (workspaceId: string, owner: string) => `ws-${workspaceId}.labels-${owner}`;
