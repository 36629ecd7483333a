import { z } from 'zod';
import { idPatterns } from '../../../domain/shared/ids.ts';
import { findBroadcast, type BroadcastRow } from '../../../projections/broadcasts/queries.ts';
import { lookup } from '../../lookups.ts';

const progressView = z.object({
  recipients: z
    .number()
    .int()
    .nullable()
    .describe("Taken at the start (null before): the audiences' contacts, less suppressed and unsubscribed ones."),
  sent: z.number().int().describe('Emails accepted and handed to delivery.'),
  failed: z
    .number()
    .int()
    .describe('Recipients suppressed at acceptance, or refused by the send (counted at completion).'),
  delivered: z.number().int(),
  bounced: z.number().int(),
  complained: z.number().int(),
  opened: z.number().int().describe('Recipients who opened, each once.'),
  clicked: z.number().int().describe('Recipients who clicked a link, each once.'),
  unsubscribed: z.number().int(),
});

export const broadcastView = z.object({
  object: z.literal('broadcast'),
  id: z.string(),
  name: z.string().nullable(),
  status: z.enum(['scheduled', 'sending', 'completed', 'cancelled']),
  from: z.string(),
  templateId: z.string(),
  subject: z.string().nullable(),
  audienceIds: z.array(z.string()),
  scheduledAt: z.string().nullable(),
  createdAt: z.string(),
  startedAt: z.string().nullable(),
  completedAt: z.string().nullable(),
  cancelledAt: z.string().nullable(),
  progress: progressView,
});

const iso = (d: Date | null) => (d === null ? null : d.toISOString());

export function viewBroadcast(row: BroadcastRow): z.infer<typeof broadcastView> {
  return {
    object: 'broadcast',
    id: row.id,
    name: row.name,
    status: row.status,
    from: row.from_address,
    templateId: row.template_id,
    subject: row.subject,
    audienceIds: row.audience_ids,
    scheduledAt: iso(row.scheduled_at),
    createdAt: row.created_at.toISOString(),
    startedAt: iso(row.started_at),
    completedAt: iso(row.completed_at),
    cancelledAt: iso(row.cancelled_at),
    progress: {
      recipients: row.recipients,
      sent: row.sent,
      failed: row.failed,
      delivered: row.delivered,
      bounced: row.bounced,
      complained: row.complained,
      opened: row.opened,
      clicked: row.clicked,
      unsubscribed: row.unsubscribed,
    },
  };
}

export const broadcastOr404 = lookup(findBroadcast, {
  code: 'resource_not_found',
  message: 'No such broadcast.',
  param: 'id',
  pattern: idPatterns.broadcast,
});
