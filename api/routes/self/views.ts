import { z } from 'zod';
import type { RequestLogRow } from '../../request-log.ts';

export const requestEntry = z.object({
  object: z.literal('api_request'),
  requestId: z.string(),
  method: z.string(),
  path: z.string(),
  status: z.number().int(),
  errorCode: z.string().nullable(),
  durationMs: z.number(),
  ip: z.string().nullable(),
  userAgent: z.string().nullable(),
  createdAt: z.string(),
});

export function viewRequest(r: RequestLogRow): z.infer<typeof requestEntry> {
  return {
    object: 'api_request',
    requestId: r.request_id,
    method: r.method,
    path: r.path,
    status: r.status,
    errorCode: r.error_code,
    durationMs: Math.round(r.duration_ms * 100) / 100,
    ip: r.ip,
    userAgent: r.user_agent,
    createdAt: r.created_at.toISOString(),
  };
}
