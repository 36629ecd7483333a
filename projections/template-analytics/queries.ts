import { sql, type Kysely } from 'kysely';
import type { Reach } from '../addresses/queries.ts';
import type { ReadModels } from '../tables.ts';

export const COUNTS = ['sent', 'delivered', 'bounced', 'complained', 'opened', 'clicked', 'unsubscribed'] as const;
export type Counts = Record<(typeof COUNTS)[number], number>;

export interface AnalyticsDay extends Counts {
  versionId: string;
  /** `YYYY-MM-DD`, UTC. */
  date: string;
}

/**
 * A template's sends counted per version and UTC day of sending, over `[from, to]` (dates,
 * inclusive), cancelled messages left out; days without sends have no row. One round trip over
 * the `(workspace_id, template_id, sent_at)` index.
 */
export async function templateAnalytics(
  db: Kysely<ReadModels>,
  workspaceId: string,
  templateId: string,
  range: { from: string; to: string; versionId?: string },
  reach: Reach | null,
): Promise<AnalyticsDay[]> {
  const counted = sql.join(
    COUNTS.map((c) =>
      c === 'sent' ? sql`count(*)::int AS sent` : sql`(count(*) FILTER (WHERE ${sql.ref(c)}))::int AS ${sql.ref(c)}`,
    ),
  );
  const { rows } = await sql<AnalyticsDay>`SELECT version_id AS "versionId",
      to_char(sent_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS date, ${counted}
    FROM template_sends
    WHERE workspace_id = ${workspaceId} AND template_id = ${templateId} AND NOT cancelled
      AND sent_at >= (${range.from}::date)::timestamp AT TIME ZONE 'UTC'
      AND sent_at < ((${range.to}::date + 1)::timestamp AT TIME ZONE 'UTC')
      ${range.versionId === undefined ? sql`` : sql`AND version_id = ${range.versionId}`}
      ${reach === null ? sql`` : sql`AND (from_email = ANY(${reach.addresses}::text[]) OR from_domain = ANY(${reach.domains}::text[]))`}
    GROUP BY 1, 2 ORDER BY 2, 1`.execute(db);
  return rows;
}
