import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { createAutomation, deleteAutomation, updateAutomation } from '../../commands/automations/handlers.ts';
import { stepsSchema, triggerSchema, type Step } from '../../domain/automations/steps.ts';
import { findAutomation, listAutomations, listRuns, listSends, type AutomationRow } from '../../projections/automations/queries.ts';
import { actorOf } from '../credential.ts';
import { formatETag, ifMatchHeader, ifMatchOf } from '../etags.ts';
import { lookup } from '../lookups.ts';
import { createdKey, cursorParam, limitParam, pageSchema } from '../paging.ts';
import type { AnswerHead } from '../idempotency.ts';
import { route } from '../route.ts';
import type { ApiDeps } from '../deps.ts';

const tags = ['Automations'];
const name = z.string().trim().min(1).max(100);
const idParams = z.object({ id: z.string().max(64) });

const automationView = z.object({
  object: z.literal('automation'),
  id: z.string(),
  name: z.string(),
  status: z.enum(['live', 'paused']),
  trigger: z.object({ event: z.string(), filters: z.array(z.record(z.string(), z.unknown())) }),
  steps: z.array(z.record(z.string(), z.unknown())),
  createdAt: z.string(),
  updatedAt: z.string(),
});
const runView = z.object({
  object: z.literal('automation_run'),
  id: z.string(),
  automationId: z.string(),
  contactId: z.string(),
  email: z.string(),
  status: z.enum(['ready', 'waiting', 'completed']),
  step: z.number().int().describe('Index of the instruction the run stands at.'),
  waitingFor: z.string().nullable().describe('The event name a `wait_for_event` waits for.'),
  wakeAt: z.string().nullable(),
  enrolledAt: z.string(),
  completedAt: z.string().nullable(),
});
const sendView = z.object({
  object: z.literal('automation_send'),
  id: z.string(),
  automationId: z.string(),
  runId: z.string(),
  contactId: z.string(),
  email: z.string(),
  template: z.string(),
  subject: z.string().nullable(),
  data: z.record(z.string(), z.unknown()),
  createdAt: z.string(),
});

const automationOr404 = lookup(findAutomation, { code: 'resource_not_found', message: 'No such automation.', param: 'id' });

const viewAutomation = (r: AutomationRow) => ({
  object: 'automation' as const,
  id: r.id,
  name: r.name,
  status: r.status,
  trigger: r.trigger,
  steps: r.steps,
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
});

export function registerAutomations(app: FastifyInstance, deps: ApiDeps): void {
  const rowOf = (workspaceId: string, id: string) => automationOr404(deps.db, workspaceId, id);
  const answer = async (reply: AnswerHead, workspaceId: string, id: string) => {
    const row = await rowOf(workspaceId, id);
    reply.header('etag', formatETag(row.revision));
    return viewAutomation(row);
  };

  route(app, {
    method: 'GET',
    url: '/automations',
    summary: 'List automations',
    description: 'Scope: `automations:read`. Newest first; `status` filters.',
    tags,
    scope: 'automations:read',
    query: z.strictObject({ limit: limitParam(), cursor: cursorParam, status: z.enum(['live', 'paused']).optional() }),
    response: pageSchema(automationView),
    handler: async ({ credential, query }) =>
      deps.cursors.list(credential.workspaceId, query, {
        name: 'automations',
        rows: (after, limit) => listAutomations(deps.db, credential.workspaceId, { status: query.status, limit, after }),
        key: createdKey,
        view: viewAutomation,
      }),
  });

  route(app, {
    method: 'POST',
    url: '/automations',
    summary: 'Create an automation',
    description:
      'Scope: `automations:write`. `trigger.event` names the contact event that enrols a contact; every `filters` entry must hold on the ' +
      "event's properties (`email` is never seen). `steps`: `wait_for_event {name, timeoutMinutes}`, `wait {minutes}`, " +
      '`branch {ifEvent, withinMinutes?, then, else}`, `send {template, subject?, data?}` (recorded as a send request). Live by default.',
    tags,
    scope: 'automations:write',
    body: z.strictObject({ name, status: z.enum(['live', 'paused']).default('live'), trigger: triggerSchema, steps: stepsSchema }),
    status: 201,
    response: automationView,
    handler: async ({ credential, body, request, reply }) => {
      const id = await createAutomation(
        deps.commands,
        actorOf(credential, request.id),
        { definition: { name: body.name, trigger: body.trigger, steps: body.steps as Step[] }, status: body.status },
        new Date().toISOString(),
      );
      return answer(reply, credential.workspaceId, id);
    },
  });

  route(app, {
    method: 'GET',
    url: '/automations/:id',
    summary: 'Read an automation',
    description: 'Scope: `automations:read`. The `ETag` header feeds `If-Match`.',
    tags,
    scope: 'automations:read',
    params: idParams,
    response: automationView,
    handler: async ({ credential, params, reply }) => answer(reply, credential.workspaceId, params.id),
  });

  route(app, {
    method: 'PATCH',
    url: '/automations/:id',
    summary: 'Update an automation',
    description:
      'Scope: `automations:write`. Omitted fields stay; `steps` and `trigger` replace wholesale; `status` pauses or resumes. Runs under way keep ' +
      'the steps they were enrolled with.',
    tags,
    scope: 'automations:write',
    headers: ifMatchHeader('automation'),
    params: idParams,
    body: z.strictObject({ name: name.optional(), status: z.enum(['live', 'paused']).optional(), trigger: triggerSchema.optional(), steps: stepsSchema.optional() }),
    response: automationView,
    handler: async ({ credential, params, body, request, reply }) => {
      const row = await rowOf(credential.workspaceId, params.id);
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
      return answer(reply, credential.workspaceId, row.id);
    },
  });

  for (const [action, status] of [
    ['pause', 'paused'],
    ['resume', 'live'],
  ] as const) {
    route(app, {
      method: 'POST',
      url: `/automations/:id/${action}`,
      summary: action === 'pause' ? 'Pause an automation (it enrols nobody until resumed)' : 'Resume an automation',
      description: 'Scope: `automations:write`. Doing it twice changes nothing. Runs under way carry on either way.',
      tags,
      scope: 'automations:write',
      headers: ifMatchHeader('automation'),
      params: idParams,
      response: automationView,
      handler: async ({ credential, params, request, reply }) => {
        const row = await rowOf(credential.workspaceId, params.id);
        await updateAutomation(
          deps.commands,
          actorOf(credential, request.id),
          row.id,
          { ifMatch: ifMatchOf(request.headers, 1)?.[0] ?? null, patch: {}, status },
          new Date().toISOString(),
        );
        return answer(reply, credential.workspaceId, row.id);
      },
    });
  }

  route(app, {
    method: 'DELETE',
    url: '/automations/:id',
    summary: 'Delete an automation',
    description:
      'Scope: `automations:write`. It enrols nobody from then on, and its runs under way end where they stand: no step of them runs after ' +
      'this answers. Its runs and send requests go with it; afterwards every route of it is 404.',
    tags,
    scope: 'automations:write',
    headers: ifMatchHeader('automation'),
    params: idParams,
    response: z.object({ object: z.literal('automation'), id: z.string(), deleted: z.literal(true) }),
    handler: async ({ credential, params, request }) => {
      const row = await rowOf(credential.workspaceId, params.id);
      await deleteAutomation(
        deps.commands,
        actorOf(credential, request.id),
        row.id,
        { ifMatch: ifMatchOf(request.headers, 1)?.[0] ?? null },
        new Date().toISOString(),
      );
      return { object: 'automation' as const, id: row.id, deleted: true as const };
    },
  });

  route(app, {
    method: 'GET',
    url: '/automations/:id/runs',
    summary: 'Runs of an automation',
    description: 'Scope: `automations:read`. Newest enrolment first.',
    tags,
    scope: 'automations:read',
    params: idParams,
    query: z.strictObject({ limit: limitParam(), cursor: cursorParam }),
    response: pageSchema(runView),
    handler: async ({ credential, params, query }) => {
      const row = await rowOf(credential.workspaceId, params.id);
      return deps.cursors.list(credential.workspaceId, query, {
        name: `automation-runs:${row.id}`,
        rows: (after: [string, string] | null, limit) => listRuns(deps.db, credential.workspaceId, row.id, limit, after),
        key: (r) => [r.enrolled_at.toISOString(), r.id],
        view: (r) => ({
        object: 'automation_run' as const,
        id: r.id,
        automationId: r.automation_id,
        contactId: r.contact_id,
        email: r.email,
        status: r.status as 'ready' | 'waiting' | 'completed',
        step: r.pc,
        waitingFor: r.wait_event,
        wakeAt: r.wake_at?.toISOString() ?? null,
        enrolledAt: r.enrolled_at.toISOString(),
          completedAt: r.completed_at?.toISOString() ?? null,
        }),
      });
    },
  });

  route(app, {
    method: 'GET',
    url: '/automations/:id/sends',
    summary: 'Send requests an automation recorded',
    description: 'Scope: `automations:read`. Newest first. Sending does not exist yet: a `send` step records a request here.',
    tags,
    scope: 'automations:read',
    params: idParams,
    query: z.strictObject({ limit: limitParam(), cursor: cursorParam }),
    response: pageSchema(sendView),
    handler: async ({ credential, params, query }) => {
      const row = await rowOf(credential.workspaceId, params.id);
      return deps.cursors.list(credential.workspaceId, query, {
        name: `automation-sends:${row.id}`,
        rows: (after, limit) => listSends(deps.db, credential.workspaceId, row.id, limit, after),
        key: createdKey,
        view: (r) => ({
        object: 'automation_send' as const,
        id: r.id,
        automationId: r.automation_id,
        runId: r.run_id,
        contactId: r.contact_id,
        email: r.email,
        template: r.template,
        subject: r.subject,
        data: r.data,
          createdAt: r.created_at.toISOString(),
        }),
      });
    },
  });
}
