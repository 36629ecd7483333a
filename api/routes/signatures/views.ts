import { mailboxOwnerOf } from '../../../domain/shared/mailbox-owners.ts';
import { z } from 'zod';
import { checkAddress } from '../../../domain/addresses/address.ts';
import { checkDomainName } from '../../../domain/domains/name.ts';
import { idPatterns } from '../../../domain/shared/ids.ts';
import { SIGNATURE_HTML_MAX, SIGNATURE_NAME_MAX } from '../../../domain/signatures/decide.ts';
import { findMailbox } from '../../../projections/addresses/queries.ts';
import { findSignature, type SignatureRow } from '../../../projections/signatures/queries.ts';
import type { Credential } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { ApiError } from '../../errors/api-error.ts';
import { lookup } from '../../lookups.ts';
import { requireReach } from '../../narrowing.ts';
import { text } from '../../schemas.ts';
import type { SignatureOwner } from '../../../commands/signatures/handlers.ts';

/**
 * An address as signatures name it: a full address, lower-cased, or `*@<domain>` for a catch-all.
 * `@<domain>` (a whole domain) and anything not an address are 422 `invalid_parameter`.
 */
export const signatureAddress = z
  .string()
  .max(320)
  .transform((value, ctx) => {
    const trimmed = value.trim().toLowerCase();
    if (trimmed.startsWith('@')) {
      ctx.addIssue({ code: 'custom', message: 'names a whole domain; a catch-all is `*@<domain>`' });
      return z.NEVER;
    }
    if (trimmed.startsWith('*@')) {
      const domain = checkDomainName(trimmed.slice(2));
      if (!domain.ok) {
        ctx.addIssue({ code: 'custom', message: domain.reason });
        return z.NEVER;
      }
      return `*@${domain.domain}`;
    }
    const checked = checkAddress(trimmed);
    if (!checked.ok) {
      ctx.addIssue({ code: 'custom', message: checked.reason });
      return z.NEVER;
    }
    return checked.address;
  })
  .describe('An address, or `*@<domain>` for a catch-all.');

export const signatureName = text(SIGNATURE_NAME_MAX).refine((s) => s.length > 0, { message: 'must not be empty' });
export const signatureHtmlInput = z
  .string()
  .max(SIGNATURE_HTML_MAX * 2)
  .describe(
    'Sanitised like outgoing mail; at most 150,000 characters before and after; must keep some text or an image.',
  );

export const signatureView = z.object({
  object: z.literal('signature'),
  id: z.string(),
  address: z.string().describe('Lower-cased, or `*@<domain>` for a catch-all.'),
  name: z.string(),
  html: z.string(),
  isDefault: z.boolean().describe('Signs new mail from the address.'),
  isReplyDefault: z.boolean().describe('Signs replies and forwards.'),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const viewSignature = (row: SignatureRow): z.infer<typeof signatureView> => ({
  object: 'signature',
  id: row.id,
  address: row.address,
  name: row.name,
  html: row.html,
  isDefault: row.is_default,
  isReplyDefault: row.is_reply_default,
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
});

/** A signature the caller reaches; another workspace's, or one of an address a narrowed key does not hold, is 404. */
export const signatureOr404 = lookup(findSignature, {
  code: 'resource_not_found',
  message: 'No such signature.',
  param: 'id',
  pattern: idPatterns.signature,
});

/**
 * Whose signatures `address` names, for a write: an address of the workspace, or a catch-all on a
 * verified (receiving) domain of the workspace with `catchAll` on. A narrowed credential writes
 * only to addresses it holds, and to a catch-all only with its whole domain (422
 * `capability_unsupported`); anything else is 404 `address_not_found`. `param` names the field.
 */
export async function ownerOf(
  deps: ApiDeps,
  credential: Credential,
  address: string,
  param: string,
): Promise<SignatureOwner> {
  requireReach(
    credential,
    address,
    'writes signatures only of the addresses it holds (a catch-all: its whole domain)',
    param,
  );
  const mailbox = await findMailbox(deps.db, credential.workspaceId, address);
  if (mailbox) return { owner: mailboxOwnerOf(mailbox), address };
  throw new ApiError(
    'address_not_found',
    address.startsWith('*@')
      ? 'A catch-all takes signatures on a verified domain of this workspace with `catchAll` on.'
      : `${address} is not an address of this workspace.`,
    param,
  );
}

export const idParams = z.strictObject({ id: z.string().max(400) });
