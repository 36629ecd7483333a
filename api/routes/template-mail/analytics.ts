import type { Kysely } from 'kysely';
import { z } from 'zod';
import {
  ANALYTICS_DAYS_MAX,
  ANALYTICS_DEFAULT_DAYS,
  analyticsDate,
  analyticsPeriod,
} from '../../../domain/templates/analytics.ts';
import { workspaceOfPartition } from '../../../domain/shared/partitions.ts';
import { COUNTS, templateAnalytics, type Counts } from '../../../projections/template-analytics/queries.ts';
import type { Reach } from '../../../projections/addresses/queries.ts';
import type { ReadModels } from '../../../projections/tables.ts';
import { versionNumbers } from '../../../projections/templates/queries.ts';
import type { ApiDeps } from '../../deps.ts';
import { ApiError } from '../../errors/api-error.ts';
import { reachOf } from '../../narrowing.ts';
import { operation, type Operation } from '../../route.ts';
import { idParams, templateOr404, templateVersionOr422 } from '../templates/views.ts';

const rate = z.number().nullable();
const countsView = z.object({
  ...Object.fromEntries(COUNTS.map((c) => [c, z.number().int()])),
  rates: z
    .object({
      delivered: rate,
      bounced: rate,
      complained: rate,
      opened: rate,
      clicked: rate,
      unsubscribed: rate,
    })
    .describe(
      'delivered and bounced of sent; complained, opened, clicked and unsubscribed of delivered; 0 to 1, four decimals; null with nothing to divide by.',
    ),
});

const analyticsView = z.object({
  object: z.literal('template_analytics'),
  templateId: z.string(),
  from: z.string(),
  to: z.string(),
  totals: countsView,
  versions: z.array(
    z.object({
      version: z.number().int().nullable().describe('Null for a version deleted since.'),
      versionId: z.string(),
      totals: countsView,
      days: z.array(countsView.extend({ date: z.string() })),
    }),
  ),
});

const ratio = (n: number, of: number) => (of === 0 ? null : Math.round((n / of) * 10_000) / 10_000);

function withRates(c: Counts) {
  return {
    ...c,
    rates: {
      delivered: ratio(c.delivered, c.sent),
      bounced: ratio(c.bounced, c.sent),
      complained: ratio(c.complained, c.delivered),
      opened: ratio(c.opened, c.delivered),
      clicked: ratio(c.clicked, c.delivered),
      unsubscribed: ratio(c.unsubscribed, c.delivered),
    },
  };
}

const zero = (): Counts => ({
  sent: 0,
  delivered: 0,
  bounced: 0,
  complained: 0,
  opened: 0,
  clicked: 0,
  unsubscribed: 0,
});
function add(into: Counts, c: Counts): Counts {
  for (const k of COUNTS) into[k] += c[k];
  return into;
}
const countsOf = (row: Counts): Counts => add(zero(), row);

/**
 * What `GET /templates/{id}/analytics` answers for a template over a checked period: totals, and
 * per version (newest first) its totals and days. Also what a task's `template_analytics` tells.
 */
export async function viewTemplateAnalytics(
  db: Kysely<ReadModels>,
  workspaceId: string,
  templateId: string,
  range: { from: string; to: string; versionId?: string },
  reach: Reach | null,
): Promise<z.infer<typeof analyticsView>> {
  const [rows, versions] = await Promise.all([
    templateAnalytics(db, workspaceId, templateId, range, reach),
    versionNumbers(db, templateId),
  ]);
  const numberOf = new Map(versions.map((v) => [v.id, v.version]));
  const byVersion = new Map<string, { totals: Counts; days: (Counts & { date: string })[] }>();
  const totals = zero();
  for (const r of rows) {
    const counts = countsOf(r);
    const entry = byVersion.get(r.versionId) ?? { totals: zero(), days: [] };
    byVersion.set(r.versionId, entry);
    add(entry.totals, counts);
    add(totals, counts);
    entry.days.push({ date: r.date, ...counts });
  }
  return {
    object: 'template_analytics' as const,
    templateId,
    from: range.from,
    to: range.to,
    totals: withRates(totals),
    versions: [...byVersion]
      .map(([versionId, v]) => ({
        version: numberOf.get(versionId) ?? null,
        versionId,
        totals: withRates(v.totals),
        days: v.days.map(({ date, ...c }) => ({ date, ...withRates(c) })),
      }))
      .sort((a, b) => (b.version ?? 0) - (a.version ?? 0)),
  };
}

export const templateAnalyticsOperations = (deps: ApiDeps): Operation[] => [
  operation({
    method: 'GET',
    url: '/templates/:id/analytics',
    operationId: 'getTemplateAnalytics',
    errors: ['resource_not_found', 'template_version_not_found'],
    summary: 'Analytics of a template',
    description:
      'Scope: `templates:read`. What became of the mail sent with the template, per version and UTC day of sending, over ' +
      `\`from\` to \`to\` (dates, inclusive; default the last ${ANALYTICS_DEFAULT_DAYS} days to today; at most ${ANALYTICS_DAYS_MAX} ` +
      'days): recipients sent to (suppressed and cancelled ones left out), delivered, bounced, complained, opened and ' +
      'clicked (only through an `active` tracking host; a click counts as an open), unsubscribed through the message; ' +
      'with rates. Everything that happens to a send counts on the day it was sent. Days without sends are left out.',
    scope: 'templates:read',
    params: idParams,
    query: z.strictObject({
      from: analyticsDate.optional(),
      to: analyticsDate.optional(),
      version: z.coerce.number().int().positive().max(2_147_483_647).optional(),
    }),
    response: analyticsView,
    handler: async ({ credential, params, query }) => {
      const row = await templateOr404(deps.db, workspaceOfPartition(credential.workspaceId), params.id);
      const period = analyticsPeriod(query);
      if (period.days < 1) throw new ApiError('invalid_parameter', '`from` is after `to`.', 'from');
      if (period.days > ANALYTICS_DAYS_MAX)
        throw new ApiError('invalid_parameter', `At most ${ANALYTICS_DAYS_MAX} days from \`from\` to \`to\`.`, 'from');
      const version =
        query.version === undefined ? undefined : await templateVersionOr422(deps.db, row.id, query.version);
      return viewTemplateAnalytics(
        deps.db,
        credential.workspaceId,
        row.id,
        { from: period.from, to: period.to, ...(version ? { versionId: version.id } : {}) },
        reachOf(credential),
      );
    },
  }),
];
