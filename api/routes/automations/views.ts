import type { Kysely } from 'kysely';
import type { ReadModels } from '../../../projections/tables.ts';
import { z } from 'zod';
import {
  findAutomation,
  type AutomationRow,
  type RunRow,
  type SendRow,
} from '../../../projections/automations/queries.ts';
import { formatETag } from '../../etags.ts';
import type { AnswerHead } from '../../idempotency.ts';
import { lookup } from '../../lookups.ts';

export const idParams = z.object({ id: z.string().max(64) });

export const automationView = z.object({
  object: z.literal('automation'),
  id: z.string(),
  name: z.string(),
  status: z.enum(['live', 'paused']),
  trigger: z.object({ event: z.string(), filters: z.array(z.record(z.string(), z.unknown())) }),
  steps: z.array(z.record(z.string(), z.unknown())),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export const runView = z.object({
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
export const sendView = z.object({
  object: z.literal('automation_send'),
  id: z.string(),
  automationId: z.string(),
  runId: z.string(),
  contactId: z.string(),
  email: z.string(),
  template: z.string(),
  subject: z.string().nullable(),
  data: z.record(z.string(), z.unknown()),
  from: z.string().nullable(),
  status: z
    .enum(['pending', 'sent', 'refused'])
    .describe(
      '`sent`: `emailId` names the email (`GET /emails/{id}`); `refused`: `error` says why, as `POST /emails` would.',
    ),
  emailId: z.string().nullable(),
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
  createdAt: z.string(),
});

export const automationOr404 = lookup(findAutomation, {
  code: 'resource_not_found',
  message: 'No such automation.',
  param: 'id',
});

export const viewAutomation = (r: AutomationRow) => ({
  object: 'automation' as const,
  id: r.id,
  name: r.name,
  status: r.status,
  trigger: r.trigger,
  steps: r.steps,
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
});

export const viewRun = (r: RunRow): z.infer<typeof runView> => ({
  object: 'automation_run',
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
});

export const viewSend = (r: SendRow): z.infer<typeof sendView> => ({
  object: 'automation_send',
  id: r.id,
  automationId: r.automation_id,
  runId: r.run_id,
  contactId: r.contact_id,
  email: r.email,
  template: r.template,
  subject: r.subject,
  data: r.data,
  from: r.from_address,
  status: r.sent_at === null ? 'pending' : r.email_id !== null ? 'sent' : 'refused',
  emailId: r.email_id,
  error: r.refusal_code === null ? null : { code: r.refusal_code, message: r.refusal_message ?? '' },
  createdAt: r.created_at.toISOString(),
});

/** The automation as it now stands, with its ETag (which feeds If-Match). */
export async function answerAutomation(
  db: Kysely<ReadModels>,
  reply: AnswerHead,
  workspaceId: string,
  id: string,
): Promise<z.infer<typeof automationView>> {
  const row = await automationOr404(db, workspaceId, id);
  reply.header('etag', formatETag(row.revision));
  return viewAutomation(row);
}
