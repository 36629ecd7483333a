import { z } from 'zod';
import { createLabel, deleteLabel, updateLabel } from '../../../commands/labels/handlers.ts';
import { LABEL_NAME_MAX, LABELS_MAX } from '../../../domain/labels/decide.ts';
import { isSystemLabel, SYSTEM_LABELS } from '../../../domain/threads/events.ts';
import { type LabelRow, listLabels } from '../../../projections/threads/labels.ts';
import { actorOf } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { reachOf } from '../../narrowing.ts';
import { cursorParam, limitParam, pageSchema } from '../../paging.ts';
import { operation, type Operation } from '../../route.ts';
import { signatureAddress } from '../signatures/views.ts';
import {
  labelColor,
  labelName,
  labelOr404,
  labelView,
  labelMailboxOf,
  refuseSystemLabel,
  viewLabel,
  viewSystemLabel,
} from './views.ts';

const idParams = z.strictObject({ id: z.string().max(400) });

/** A row of the list: the system labels first (in their fixed order), then the custom ones. */
type Listed = { system: (typeof SYSTEM_LABELS)[number]; index: number } | { row: LabelRow };
type ListKey = [string, string, string, string];

const listKey = (item: Listed): ListKey =>
  'row' in item
    ? ['custom', item.row.address, item.row.created_at.toISOString(), item.row.id]
    : ['system', String(item.index), '', ''];

export const labelOperations = (deps: ApiDeps): Operation[] => {
  const reread = (workspaceId: string, id: string) => labelOr404(deps.db, workspaceId, null, id).then(viewLabel);
  return [
    operation({
      method: 'GET',
      url: '/labels',
      operationId: 'listLabels',
      summary: 'List labels',
      description:
        'Scope: `labels:read`. The system labels first (`inbox`, `archive`, `spam`, `trash`, `sent`, `drafts`: every ' +
        'mailbox has them), then the custom labels by mailbox and oldest first; `address` (an address or `*@<domain>`) ' +
        "lists one mailbox's. A narrowed credential sees only the labels of the mailboxes it reaches.",
      scope: 'labels:read',
      query: z.strictObject({ address: signatureAddress.optional(), limit: limitParam(), cursor: cursorParam }),
      response: pageSchema(labelView),
      handler: async ({ credential, query }) =>
        deps.cursors.list(credential.workspaceId, query, {
          name: 'labels',
          rows: async (after: ListKey | null, limit): Promise<Listed[]> => {
            const system =
              after === null || after[0] === 'system'
                ? SYSTEM_LABELS.map((name, index) => ({ system: name, index })).filter(
                    (l) => after === null || l.index > Number(after[1]),
                  )
                : [];
            if (system.length > limit) return system.slice(0, limit + 1);
            const custom = await listLabels(
              deps.db,
              credential.workspaceId,
              { address: query.address, reach: reachOf(credential) },
              limit - system.length,
              after?.[0] === 'custom' ? [after[1], after[2], after[3]] : null,
            );
            return [...system, ...custom.map((row) => ({ row }))];
          },
          key: listKey,
          view: (item) => ('row' in item ? viewLabel(item.row) : viewSystemLabel(item.system)),
        }),
    }),

    operation({
      method: 'GET',
      url: '/labels/:id',
      operationId: 'getLabel',
      errors: ['resource_not_found'],
      summary: 'Read a label',
      description:
        'Scope: `labels:read`. A custom label by its id, or a system label by its name. 404 also for a label of a ' +
        'mailbox a narrowed credential does not reach.',
      scope: 'labels:read',
      params: idParams,
      response: labelView,
      handler: async ({ credential, params }) =>
        isSystemLabel(params.id)
          ? viewSystemLabel(params.id)
          : viewLabel(await labelOr404(deps.db, credential.workspaceId, reachOf(credential), params.id)),
    }),

    operation({
      method: 'POST',
      url: '/labels',
      operationId: 'createLabel',
      errors: ['address_not_found', 'address_has_no_mailbox', 'label_name_taken', 'label_limit_reached'],
      summary: 'Create a label',
      description:
        'Scope: `labels:write`. A custom label of one mailbox: an address of the workspace that takes mail, or a ' +
        'catch-all (`*@<domain>`) that is on (422 `address_has_no_mailbox` for an address that takes none, 404 ' +
        '`address_not_found` for one the workspace does not have). Names are unique per mailbox ignoring case, and a ' +
        `system label's name is taken everywhere (409 \`label_name_taken\`); at most ${LABELS_MAX} per mailbox (422 ` +
        '`label_limit_reached`).',
      scope: 'labels:write',
      body: z.strictObject({
        address: signatureAddress,
        name: labelName.describe(`1 to ${LABEL_NAME_MAX} characters, trimmed.`),
        color: labelColor.optional(),
      }),
      status: 201,
      response: labelView,
      handler: async ({ credential, body, request }) => {
        const owner = await labelMailboxOf(deps, credential, body.address);
        const { labelId } = await createLabel(
          deps.commands,
          actorOf(credential, request.id),
          { ...owner, name: body.name, color: body.color ?? null },
          new Date().toISOString(),
        );
        return reread(credential.workspaceId, labelId);
      },
    }),

    operation({
      method: 'PATCH',
      url: '/labels/:id',
      operationId: 'updateLabel',
      errors: ['resource_not_found', 'label_name_taken'],
      summary: 'Rename or colour a label',
      description:
        'Scope: `labels:write`. Omitted fields stay; `color: null` takes the colour off. Threads keep the label (they ' +
        'carry its id). A system label is 422 `invalid_parameter` on `id`.',
      scope: 'labels:write',
      params: idParams,
      body: z.strictObject({ name: labelName.optional(), color: labelColor.optional() }),
      response: labelView,
      handler: async ({ credential, params, body, request }) => {
        refuseSystemLabel(params.id);
        const row = await labelOr404(deps.db, credential.workspaceId, reachOf(credential), params.id);
        await updateLabel(
          deps.commands,
          actorOf(credential, request.id),
          { owner: row.owner, labelId: row.id, ...body },
          new Date().toISOString(),
        );
        return reread(credential.workspaceId, row.id);
      },
    }),

    operation({
      method: 'DELETE',
      url: '/labels/:id',
      operationId: 'deleteLabel',
      errors: ['resource_not_found'],
      summary: 'Delete a label',
      description:
        'Scope: `labels:write`. The label leaves every thread that carried it; the threads stay. A system label is 422 ' +
        '`invalid_parameter` on `id`.',
      scope: 'labels:write',
      params: idParams,
      response: z.object({ object: z.literal('label'), id: z.string(), deleted: z.literal(true) }),
      handler: async ({ credential, params, request }) => {
        refuseSystemLabel(params.id);
        const row = await labelOr404(deps.db, credential.workspaceId, reachOf(credential), params.id);
        await deleteLabel(
          deps.commands,
          actorOf(credential, request.id),
          { owner: row.owner, labelId: row.id },
          new Date().toISOString(),
        );
        return { object: 'label' as const, id: row.id, deleted: true as const };
      },
    }),
  ];
};
