import { z } from 'zod';
import { createRule, deleteRule, reorderRules, updateRule } from '../../../commands/rules/handlers.ts';
import { REORDER_MAX, RULES_MAX } from '../../../domain/rules/decide.ts';
import { listRules, type RuleRow } from '../../../projections/rules/queries.ts';
import { actorOf } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { reaches, reachOf } from '../../narrowing.ts';
import { cursorParam, limitParam, pageSchema } from '../../paging.ts';
import { booleanParam } from '../../query.ts';
import { operation, type Operation } from '../../route.ts';
import { ruleTestOperation } from './test.ts';
import {
  addressQuery,
  checkedActions,
  createBody,
  mailboxAddress,
  mailboxOf,
  patchBody,
  ruleOr404,
  ruleView,
  viewRule,
} from './views.ts';

const idParams = z.strictObject({ id: z.string().max(400) });
const ruleKey = (row: RuleRow): [number, string, string] => [row.position, row.created_at.toISOString(), row.id];

export const ruleOperations = (deps: ApiDeps): Operation[] => {
  const reread = (workspaceId: string, id: string) => ruleOr404(deps.db, workspaceId, null, id).then(viewRule);
  return [
    operation({
      method: 'GET',
      url: '/rules',
      operationId: 'listRules',
      errors: ['address_required'],
      summary: 'List rules',
      description:
        'Scope: `rules:read`. One mailbox’s rules (`address`: an address or `*@<domain>`, required) in the order they run: ' +
        'position, then createdAt, then id. A narrowed credential sees nothing of a mailbox it does not reach.',
      scope: 'rules:read',
      query: z.strictObject({
        address: addressQuery,
        enabled: booleanParam.optional(),
        limit: limitParam(),
        cursor: cursorParam,
      }),
      response: pageSchema(ruleView),
      handler: async ({ credential, query }) => {
        const address = mailboxAddress(query.address);
        return deps.cursors.list(credential.workspaceId, query, {
          // Bound to the mailbox: a cursor is a position among its rules, and would skip another's.
          name: `rules:${address}`,
          rows: async (after: [number, string, string] | null, limit) =>
            reaches(credential, address)
              ? listRules(deps.db, credential.workspaceId, { address, enabled: query.enabled }, limit, after)
              : [],
          key: ruleKey,
          view: viewRule,
        });
      },
    }),

    operation({
      method: 'GET',
      url: '/rules/:id',
      operationId: 'getRule',
      errors: ['resource_not_found'],
      summary: 'Read a rule',
      description: 'Scope: `rules:read`. 404 also for a rule of a mailbox a narrowed credential does not reach.',
      scope: 'rules:read',
      params: idParams,
      response: ruleView,
      handler: async ({ credential, params }) =>
        viewRule(await ruleOr404(deps.db, credential.workspaceId, reachOf(credential), params.id)),
    }),

    operation({
      method: 'POST',
      url: '/rules',
      operationId: 'createRule',
      stepUp: true,
      errors: [
        'address_required',
        'address_has_no_mailbox',
        'capability_unsupported',
        'rule_name_taken',
        'reject_needs_envelope',
        'label_not_found',
        'template_not_found',
        'workspace_limit_reached',
      ],
      summary: 'Create a rule',
      description:
        'Scope: `rules:write`. On the mailbox `?address=` names (422 `address_has_no_mailbox` when it is none of the workspace’s), ' +
        `appended at the end of its rules. Names are unique per mailbox, ignoring case (409 \`rule_name_taken\`); at most ${RULES_MAX} ` +
        'rules per workspace. A `reject` needs an `envelope_from` condition (422 `reject_needs_envelope`). Step-up for OAuth ' +
        'tokens is not asked yet.',
      scope: 'rules:write',
      query: z.strictObject({ address: addressQuery }),
      body: createBody,
      status: 201,
      response: ruleView,
      handler: async ({ credential, query, body, request }) => {
        const mailbox = await mailboxOf(deps, credential, mailboxAddress(query.address));
        const actions = await checkedActions(deps, credential.workspaceId, mailbox, body.actions);
        const { ruleId } = await createRule(
          deps.commands,
          actorOf(credential, request.id),
          {
            mailbox,
            rule: {
              name: body.name,
              description: body.description ?? null,
              enabled: body.enabled ?? true,
              match: body.match ?? 'all',
              conditions: body.conditions,
              actions,
              stopProcessing: body.stopProcessing ?? false,
            },
          },
          new Date().toISOString(),
        );
        return reread(credential.workspaceId, ruleId);
      },
    }),

    operation({
      method: 'PATCH',
      url: '/rules/:id',
      operationId: 'updateRule',
      stepUp: true,
      errors: [
        'resource_not_found',
        'rule_name_taken',
        'reject_needs_envelope',
        'label_not_found',
        'template_not_found',
      ],
      summary: 'Update a rule',
      description:
        'Scope: `rules:write`. Merged with the stored rule and checked whole; `conditions` and `actions` replace the whole ' +
        'array; `position` may be set (0 to 1,000,000; ties run oldest first).',
      scope: 'rules:write',
      params: idParams,
      body: patchBody,
      response: ruleView,
      handler: async ({ credential, params, body, request }) => {
        const row = await ruleOr404(deps.db, credential.workspaceId, reachOf(credential), params.id);
        const { actions, ...rest } = body;
        const patch = Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined));
        await updateRule(
          deps.commands,
          actorOf(credential, request.id),
          row.id,
          {
            ...patch,
            ...(actions
              ? {
                  actions: await checkedActions(
                    deps,
                    credential.workspaceId,
                    { addressId: row.address_id, domainId: row.domain_id },
                    actions,
                  ),
                }
              : {}),
          },
          new Date().toISOString(),
        );
        return reread(credential.workspaceId, row.id);
      },
    }),

    operation({
      method: 'DELETE',
      url: '/rules/:id',
      operationId: 'deleteRule',
      errors: ['resource_not_found'],
      summary: 'Delete a rule',
      description: 'Scope: `rules:write`. Permanent; the record of its runs stays.',
      scope: 'rules:write',
      params: idParams,
      response: z.object({ object: z.literal('rule'), id: z.string(), deleted: z.literal(true) }),
      handler: async ({ credential, params, request }) => {
        const row = await ruleOr404(deps.db, credential.workspaceId, reachOf(credential), params.id);
        await deleteRule(deps.commands, actorOf(credential, request.id), row.id, new Date().toISOString());
        return { object: 'rule' as const, id: row.id, deleted: true as const };
      },
    }),

    operation({
      method: 'POST',
      url: '/rules/reorder',
      operationId: 'reorderRules',
      errors: ['address_required', 'capability_unsupported', 'incomplete_order'],
      summary: 'Reorder rules',
      description:
        'Scope: `rules:write`. `ruleIds` names every rule of the mailbox (`?address=`) exactly once (1 to 100); each ' +
        'position becomes its index. Anything else is 422 `incomplete_order`. Answers the rules in their new order.',
      scope: 'rules:write',
      query: z.strictObject({ address: addressQuery }),
      body: z.strictObject({ ruleIds: z.array(z.string().max(400)).min(1).max(REORDER_MAX) }),
      response: z.object({ object: z.literal('list'), data: z.array(ruleView) }),
      handler: async ({ credential, query, body, request }) => {
        const address = mailboxAddress(query.address);
        if (!reaches(credential, address)) await mailboxOf(deps, credential, address);
        await reorderRules(
          deps.commands,
          actorOf(credential, request.id),
          address,
          body.ruleIds,
          new Date().toISOString(),
        );
        const rows = await listRules(deps.db, credential.workspaceId, { address }, REORDER_MAX, null);
        return { object: 'list' as const, data: rows.slice(0, REORDER_MAX).map(viewRule) };
      },
    }),

    ruleTestOperation(deps),
  ];
};
