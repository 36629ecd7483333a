import { z } from 'zod';
import { createAutomation, deleteAutomation, updateAutomation } from '../../../commands/automations/handlers.ts';
import { stepsSchema, triggerSchema, type Step } from '../../../domain/automations/steps.ts';
import { listAutomations, listRuns, listSends } from '../../../projections/automations/queries.ts';
import { actorOf } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { ifMatchHeader, ifMatchOf } from '../../etags.ts';
import { createdKey, cursorParam, limitParam, pageSchema } from '../../paging.ts';
import { operation, type Operation } from '../../route.ts';
import {
  answerAutomation,
  automationOr404,
  automationView,
  idParams,
  runView,
  sendView,
  viewAutomation,
  viewRun,
  viewSend,
} from './views.ts';

const name = z.string().trim().min(1).max(100);

export const automationOperations = (deps: ApiDeps): Operation[] => [
  operation({
    method: 'GET',
    url: '/automations',
    operationId: 'listAutomations',
    summary: 'List automations',
    description: 'Scope: `automations:read`. Newest first; `status` filters.',
    scope: 'automations:read',
    query: z.strictObject({ limit: limitParam(), cursor: cursorParam, status: z.enum(['live', 'paused']).optional() }),
    response: pageSchema(automationView),
    handler: async ({ credential, query }) =>
      deps.cursors.list(credential.workspaceId, query, {
        name: 'automations',
        rows: (after, limit) =>
          listAutomations(deps.db, credential.workspaceId, { status: query.status, limit, after }),
        key: createdKey,
        view: viewAutomation,
      }),
  }),

  operation({
    method: 'POST',
    url: '/automations',
    operationId: 'createAutomation',
    summary: 'Create an automation',
    description:
      'Scope: `automations:write`. `trigger.event` names the contact event that enrols a contact; every `filters` entry must hold on the ' +
      "event's properties (`email` is never seen). `steps`: `wait_for_event {name, timeoutMinutes}`, `wait {minutes}`, " +
      '`branch {ifEvent, withinMinutes?, then, else}`, `send {template, subject?, data?}` (recorded as a send request). Live by default.',
    scope: 'automations:write',
    body: z.strictObject({
      name,
      status: z.enum(['live', 'paused']).default('live'),
      trigger: triggerSchema,
      steps: stepsSchema,
    }),
    status: 201,
    response: automationView,
    handler: async ({ credential, body, request, reply }) => {
      const id = await createAutomation(
        deps.commands,
        actorOf(credential, request.id),
        { definition: { name: body.name, trigger: body.trigger, steps: body.steps as Step[] }, status: body.status },
        new Date().toISOString(),
      );
      return answerAutomation(deps.db, reply, credential.workspaceId, id);
    },
  }),

  operation({
    method: 'GET',
    url: '/automations/:id',
    operationId: 'getAutomation',
    errors: ['resource_not_found'],
    summary: 'Read an automation',
    description: 'Scope: `automations:read`. The `ETag` header feeds `If-Match`.',
    scope: 'automations:read',
    params: idParams,
    response: automationView,
    handler: async ({ credential, params, reply }) =>
      answerAutomation(deps.db, reply, credential.workspaceId, params.id),
  }),

  operation({
    method: 'PATCH',
    url: '/automations/:id',
    operationId: 'updateAutomation',
    errors: ['resource_not_found', 'version_conflict'],
    summary: 'Update an automation',
    description:
      'Scope: `automations:write`. Omitted fields stay; `steps` and `trigger` replace wholesale; `status` pauses or resumes. Runs under way keep ' +
      'the steps they were enrolled with.',
    scope: 'automations:write',
    headers: ifMatchHeader('automation'),
    params: idParams,
    body: z.strictObject({
      name: name.optional(),
      status: z.enum(['live', 'paused']).optional(),
      trigger: triggerSchema.optional(),
      steps: stepsSchema.optional(),
    }),
    response: automationView,
    handler: async ({ credential, params, body, request, reply }) => {
      const row = await automationOr404(deps.db, credential.workspaceId, params.id);
      const patch: { name?: string; trigger?: z.infer<typeof triggerSchema>; steps?: Step[] } = {};
      if (body.name !== undefined) patch.name = body.name;
      if (body.trigger !== undefined) patch.trigger = body.trigger;
      if (body.steps !== undefined) patch.steps = body.steps as Step[];
      await updateAutomation(
        deps.commands,
        actorOf(credential, request.id),
        row.id,
        { ifMatch: ifMatchOf(request.headers, 1)?.[0] ?? null, patch, status: body.status },
        new Date().toISOString(),
      );
      return answerAutomation(deps.db, reply, credential.workspaceId, row.id);
    },
  }),

  ...(
    [
      ['pause', 'paused'],
      ['resume', 'live'],
    ] as const
  ).map(([action, status]) =>
    operation({
      method: 'POST',
      url: `/automations/:id/${action}`,
      operationId: action === 'pause' ? 'pauseAutomation' : 'resumeAutomation',
      errors: ['resource_not_found', 'version_conflict'],
      summary: action === 'pause' ? 'Pause an automation (it enrols nobody until resumed)' : 'Resume an automation',
      description: 'Scope: `automations:write`. Doing it twice changes nothing. Runs under way carry on either way.',
      scope: 'automations:write',
      headers: ifMatchHeader('automation'),
      params: idParams,
      response: automationView,
      handler: async ({ credential, params, request, reply }) => {
        const row = await automationOr404(deps.db, credential.workspaceId, params.id);
        await updateAutomation(
          deps.commands,
          actorOf(credential, request.id),
          row.id,
          { ifMatch: ifMatchOf(request.headers, 1)?.[0] ?? null, patch: {}, status },
          new Date().toISOString(),
        );
        return answerAutomation(deps.db, reply, credential.workspaceId, row.id);
      },
    }),
  ),

  operation({
    method: 'DELETE',
    url: '/automations/:id',
    operationId: 'deleteAutomation',
    errors: ['resource_not_found', 'version_conflict'],
    summary: 'Delete an automation',
    description:
      'Scope: `automations:write`. It enrols nobody from then on, and its runs under way end where they stand: no step of them runs after ' +
      'this answers. Its runs and send requests go with it; afterwards every route of it is 404.',
    scope: 'automations:write',
    headers: ifMatchHeader('automation'),
    params: idParams,
    response: z.object({ object: z.literal('automation'), id: z.string(), deleted: z.literal(true) }),
    handler: async ({ credential, params, request }) => {
      const row = await automationOr404(deps.db, credential.workspaceId, params.id);
      await deleteAutomation(
        deps.commands,
        actorOf(credential, request.id),
        row.id,
        { ifMatch: ifMatchOf(request.headers, 1)?.[0] ?? null },
        new Date().toISOString(),
      );
      return { object: 'automation' as const, id: row.id, deleted: true as const };
    },
  }),

  operation({
    method: 'GET',
    url: '/automations/:id/runs',
    operationId: 'listAutomationRuns',
    errors: ['resource_not_found'],
    summary: 'Runs of an automation',
    description: 'Scope: `automations:read`. Newest enrolment first.',
    scope: 'automations:read',
    params: idParams,
    query: z.strictObject({ limit: limitParam(), cursor: cursorParam }),
    response: pageSchema(runView),
    handler: async ({ credential, params, query }) => {
      const row = await automationOr404(deps.db, credential.workspaceId, params.id);
      return deps.cursors.list(credential.workspaceId, query, {
        name: `automation-runs:${row.id}`,
        rows: (after: [string, string] | null, limit) =>
          listRuns(deps.db, credential.workspaceId, row.id, limit, after),
        key: (r) => [r.enrolled_at.toISOString(), r.id],
        view: viewRun,
      });
    },
  }),

  operation({
    method: 'GET',
    url: '/automations/:id/sends',
    operationId: 'listAutomationSends',
    errors: ['resource_not_found'],
    summary: 'Sends an automation made',
    description:
      "Scope: `automations:read`. Newest first. Each `send` step a run reached, sent through `POST /emails`'s pipeline on the " +
      'broadcast lane: `sent` with its `emailId`, or `refused` with the code `POST /emails` would answer (`pending` until then).',
    scope: 'automations:read',
    params: idParams,
    query: z.strictObject({ limit: limitParam(), cursor: cursorParam }),
    response: pageSchema(sendView),
    handler: async ({ credential, params, query }) => {
      const row = await automationOr404(deps.db, credential.workspaceId, params.id);
      return deps.cursors.list(credential.workspaceId, query, {
        name: `automation-sends:${row.id}`,
        rows: (after, limit) => listSends(deps.db, credential.workspaceId, row.id, limit, after),
        key: createdKey,
        view: viewSend,
      });
    },
  }),
];
