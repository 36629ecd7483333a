/**
 * The period a template's analytics cover, as whoever asks is held to: `GET /templates/{id}/analytics`
 * and a task's `template_analytics` tool (processes/tasks/tools.ts) take the same dates and limits.
 */
import { z } from 'zod';

/** The longest period one answer covers, in days (a year, leap day included). */
export const ANALYTICS_DAYS_MAX = 366;
export const ANALYTICS_DEFAULT_DAYS = 30;
const DAY_MS = 86_400_000;

export const analyticsDate = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'A date: YYYY-MM-DD.')
  .refine(
    (d) => !Number.isNaN(Date.parse(`${d}T00:00:00Z`)) && new Date(`${d}T00:00:00Z`).toISOString().startsWith(d),
    {
      message: 'Not a date of the calendar.',
    },
  );

/**
 * The period asked for: `to` today (UTC) unless given, `from` the last ANALYTICS_DEFAULT_DAYS days
 * to `to` unless given, and how many days it spans (below 1 when `from` is after `to`).
 */
export function analyticsPeriod(asked: { from?: string; to?: string }) {
  const to = asked.to ?? new Date().toISOString().slice(0, 10);
  const toMs = Date.parse(`${to}T00:00:00Z`);
  const from = asked.from ?? new Date(toMs - (ANALYTICS_DEFAULT_DAYS - 1) * DAY_MS).toISOString().slice(0, 10);
  return { from, to, days: (toMs - Date.parse(`${from}T00:00:00Z`)) / DAY_MS + 1 };
}
