import { mailboxOwnerOf } from '../../../domain/shared/mailbox-owners.ts';
import { z } from 'zod';
import type { LabelOwner } from '../../../commands/labels/handlers.ts';
import { LABEL_NAME_MAX } from '../../../domain/labels/decide.ts';
import { idPatterns } from '../../../domain/shared/ids.ts';
import { isSystemLabel, type SystemLabel } from '../../../domain/threads/events.ts';
import { findAddressByName } from '../../../projections/addresses/queries.ts';
import { findLabel, type LabelRow } from '../../../projections/threads/labels.ts';
import { mailboxFor } from '../../../projections/threads/queries.ts';
import type { Credential } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { ApiError } from '../../errors/api-error.ts';
import { lookup } from '../../lookups.ts';
import { requireReach } from '../../narrowing.ts';
import { text } from '../../schemas.ts';

export const labelName = text(LABEL_NAME_MAX).refine((s) => s.length > 0, { message: 'must not be empty' });
export const labelColor = z
  .string()
  .regex(/^#[0-9a-fA-F]{6}$/, { message: 'must be `#rrggbb`' })
  .transform((s) => s.toLowerCase())
  .nullable()
  .describe('`#rrggbb` (lower-cased), or null for none.');

export const labelView = z.object({
  object: z.literal('label'),
  id: z.string().describe('`lbl_…` for a custom label; a system label is named by its name (`inbox`).'),
  type: z.enum(['system', 'custom']),
  name: z.string(),
  color: z.string().nullable(),
  address: z
    .string()
    .nullable()
    .describe("A custom label's mailbox (an address, or `*@<domain>`); null: every mailbox."),
  createdAt: z.string().nullable(),
  updatedAt: z.string().nullable(),
});
export type LabelView = z.infer<typeof labelView>;

export const viewSystemLabel = (name: SystemLabel): LabelView => ({
  object: 'label',
  id: name,
  type: 'system',
  name,
  color: null,
  address: null,
  createdAt: null,
  updatedAt: null,
});

export const viewLabel = (row: LabelRow): LabelView => ({
  object: 'label',
  id: row.id,
  type: 'custom',
  name: row.name,
  color: row.color,
  address: row.address,
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
});

/** A custom label the caller reaches; another workspace's, or one of a mailbox a narrowed key does not reach, is 404. */
export const labelOr404 = lookup(findLabel, {
  code: 'resource_not_found',
  message: 'No such label.',
  param: 'id',
  pattern: idPatterns.label,
});

/** System labels are the same in every mailbox and follow from the service: they are read, never changed. */
export function refuseSystemLabel(id: string): void {
  if (isSystemLabel(id))
    throw new ApiError(
      'invalid_parameter',
      `\`${id}\` is a system label: it cannot be renamed, coloured or deleted.`,
      'id',
    );
}

/**
 * The mailbox `address` names, for a new label: one that takes mail now (an enabled address of the
 * workspace on a domain that receives, or a catch-all that is on). A narrowed credential writes
 * only inside its lists (422 `capability_unsupported`); an address of the workspace that takes no
 * mail is 422 `address_has_no_mailbox`; anything else 404 `address_not_found`.
 */
export async function labelMailboxOf(deps: ApiDeps, credential: Credential, address: string): Promise<LabelOwner> {
  requireReach(credential, address, 'makes labels only in the mailboxes it reaches (a catch-all: its whole domain)');
  const mailbox = await mailboxFor(deps.db, address);
  if (mailbox && mailbox.workspaceId === credential.workspaceId && mailbox.address === address)
    return { owner: mailboxOwnerOf(mailbox), address };
  if (address.startsWith('*@') || (await findAddressByName(deps.db, credential.workspaceId, address)))
    throw new ApiError('address_has_no_mailbox', `${address} takes no mail, so it has no labels.`, 'address');
  throw new ApiError('address_not_found', `${address} is not an address of this workspace.`, 'address');
}
