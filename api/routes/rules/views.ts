import { mailboxOwnerOf } from '../../../domain/shared/mailbox-owners.ts';
import { z } from 'zod';
import {
  ACTION_VALUE_MAX,
  ACTIONS_MAX,
  CONDITION_VALUE_MAX,
  CONDITIONS_MAX,
  HEADER_NAME_MAX,
  POSITION_MAX,
  RULE_DESCRIPTION_MAX,
  RULE_NAME_MAX,
} from '../../../domain/rules/decide.ts';
import { ACTION_TYPES, CONDITION_FIELDS, OPERATORS, type RuleMailbox } from '../../../domain/rules/events.ts';
import { isSettableLabel } from '../../../domain/threads/events.ts';
import { labelsOfMailbox } from '../../../commands/labels/handlers.ts';
import { idPatterns } from '../../../domain/shared/ids.ts';
import { findMailbox } from '../../../projections/addresses/queries.ts';
import { findRule, type RuleRow } from '../../../projections/rules/queries.ts';
import { findTemplate } from '../../../projections/templates/queries.ts';
import type { Credential } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { ApiError } from '../../errors/api-error.ts';
import { lookup } from '../../lookups.ts';
import { requireReach } from '../../narrowing.ts';
import { text } from '../../schemas.ts';
import { signatureAddress } from '../signatures/views.ts';

/** `?address=`: the mailbox, an address or `*@<domain>`; required (422 `address_required`), checked by `mailboxAddress`. */
export const addressQuery = signatureAddress
  .optional()
  .describe('The mailbox: an address, or `*@<domain>` for a catch-all. Required (422 `address_required`).');

export function mailboxAddress(address: string | undefined): string {
  if (address === undefined)
    throw new ApiError(
      'address_required',
      'Rules are per mailbox: name it with `?address=` (an address or `*@<domain>`).',
      'address',
    );
  return address;
}

export const conditionInput = z.strictObject({
  field: z.enum(CONDITION_FIELDS),
  op: z.enum(OPERATORS),
  value: z.string().max(CONDITION_VALUE_MAX),
  header: z
    .string()
    .trim()
    .max(HEADER_NAME_MAX)
    .nullable()
    .default(null)
    .describe('Required for a `header` condition.'),
  negate: z.boolean().default(false),
});
export const actionInput = z.strictObject({
  type: z.enum(ACTION_TYPES),
  value: z
    .string()
    .trim()
    .max(ACTION_VALUE_MAX)
    .nullable()
    .default(null)
    .describe('Label, forward address, or template id or slug; for `reject`, the SMTP reply text (optional).'),
});
const ruleName = text(RULE_NAME_MAX).refine((s) => s.length > 0, { message: 'must not be empty' });

export const ruleFields = {
  name: ruleName,
  description: z.string().max(RULE_DESCRIPTION_MAX).nullable().optional(),
  enabled: z.boolean().optional(),
  match: z.enum(['all', 'any']).optional(),
  conditions: z.array(conditionInput).min(1).max(CONDITIONS_MAX),
  actions: z.array(actionInput).min(1).max(ACTIONS_MAX),
  stopProcessing: z.boolean().optional(),
};
export const createBody = z.strictObject(ruleFields);
export const patchBody = z.strictObject({
  name: ruleFields.name.optional(),
  description: ruleFields.description,
  enabled: ruleFields.enabled,
  match: ruleFields.match,
  conditions: ruleFields.conditions.optional(),
  actions: ruleFields.actions.optional(),
  stopProcessing: ruleFields.stopProcessing,
  position: z.number().int().min(0).max(POSITION_MAX).optional(),
});

export const ruleView = z.object({
  object: z.literal('rule'),
  id: z.string(),
  address: z.string().describe('The mailbox: an address, or `*@<domain>`.'),
  name: z.string(),
  description: z.string().nullable(),
  enabled: z.boolean(),
  match: z.enum(['all', 'any']),
  conditions: z.array(
    z.object({
      field: z.enum(CONDITION_FIELDS),
      op: z.enum(OPERATORS),
      value: z.string(),
      header: z.string().nullable(),
      negate: z.boolean(),
    }),
  ),
  actions: z.array(z.object({ type: z.enum(ACTION_TYPES), value: z.string().nullable() })),
  stopProcessing: z.boolean(),
  position: z.number().int(),
  lastMatchedAt: z.string().nullable(),
  matchCount: z.number().int(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const viewRule = (row: RuleRow): z.infer<typeof ruleView> => ({
  object: 'rule',
  id: row.id,
  address: row.address,
  name: row.name,
  description: row.description,
  enabled: row.enabled,
  match: row.match,
  conditions: row.conditions,
  actions: row.actions,
  stopProcessing: row.stop_processing,
  position: row.position,
  lastMatchedAt: row.last_matched_at?.toISOString() ?? null,
  matchCount: row.match_count,
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
});

export const ruleOr404 = lookup(findRule, {
  code: 'resource_not_found',
  message: 'No such rule.',
  param: 'id',
  pattern: idPatterns.rule,
});

/**
 * The mailbox `address` names, for a write: an address of the workspace, or a catch-all on a
 * verified domain of the workspace with `catchAll` on; else 422 `address_has_no_mailbox` (another
 * workspace's address answers the same). A narrowed credential writes only where it reaches.
 */
export async function mailboxOf(deps: ApiDeps, credential: Credential, address: string): Promise<RuleMailbox> {
  requireReach(credential, address, 'writes rules only of the mailboxes it holds (a catch-all: its whole domain)');
  const mailbox = await findMailbox(deps.db, credential.workspaceId, address);
  if (mailbox) return mailbox;
  throw new ApiError('address_has_no_mailbox', `${address} is not a mailbox of this workspace.`, 'address');
}

type ActionIn = z.infer<typeof actionInput>;

/**
 * Action values that name things: a label (the system labels threads have), a forward address
 * (lower-cased), a template by id or slug. Answers the actions as stored.
 */
export async function checkedActions(
  deps: ApiDeps,
  workspaceId: string,
  mailbox: { addressId: string | null; domainId: string },
  actions: ActionIn[],
): Promise<ActionIn[]> {
  const custom = await labelsOfMailbox(deps.commands, workspaceId, mailboxOwnerOf(mailbox));
  const out: ActionIn[] = [];
  for (const [i, a] of actions.entries()) {
    const param = `actions.${i}.value`;
    const value = a.value ?? '';
    if (
      (a.type === 'label' || a.type === 'remove_label') &&
      a.value !== null &&
      !isSettableLabel(value) &&
      !custom.has(value)
    )
      throw new ApiError(
        'label_not_found',
        `No label \`${value}\` in this mailbox (a label id, or inbox, archive, spam, trash).`,
        param,
      );
    if (a.type === 'forward' && a.value !== null) {
      if (!z.email().safeParse(value).success)
        throw new ApiError('invalid_parameter', 'A forward names an email address.', param);
      out.push({ ...a, value: value.toLowerCase() });
      continue;
    }
    if (a.type === 'reply' && a.value !== null && !(await findTemplate(deps.db, workspaceId, value)))
      throw new ApiError('template_not_found', 'No template of the workspace has this id or slug.', param);
    out.push(a);
  }
  return out;
}
