import type { Kysely } from 'kysely';
import { SUPPRESSION_REASONS, type SuppressionReason } from '../../domain/suppressions/events.ts';

export interface SuppressionRow {
  workspace_id: string;
  id: string;
  email: string;
  reason: SuppressionReason;
  detail: string | null;
  removable: boolean;
  created_at: Date;
}

export interface SuppressionFilter {
  /** Substring of the address, reason or detail, any case; `%` and `_` match themselves. */
  q?: string;
  reason?: SuppressionReason;
}

export async function findSuppression(db: Kysely<any>, workspaceId: string, id: string): Promise<SuppressionRow | undefined> {
  return (await db
    .selectFrom('suppressions')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .executeTakeFirst()) as SuppressionRow | undefined;
}

/**
 * Newest first, after the cursor's (createdAt, id). The row comparison keeps the cursor an index
 * bound, so a page deep in a million rows costs what the first one does.
 */
export async function listSuppressions(
  db: Kysely<any>,
  workspaceId: string,
  filter: SuppressionFilter,
  limit: number,
  after: [string, string] | null,
): Promise<SuppressionRow[]> {
  let q = db.selectFrom('suppressions').selectAll().where('workspace_id', '=', workspaceId);
  if (filter.reason) q = q.where('reason', '=', filter.reason);
  const text = filter.q;
  if (text) {
    const pattern = `%${text.replace(/[\\%_]/g, '\\$&')}%`;
    // A reason is one of three words: matching them here keeps the trigram index to the free text.
    const reasons = SUPPRESSION_REASONS.filter((r) => r.includes(text.toLowerCase()));
    q = q.where((eb) =>
      eb.or([eb('email', 'ilike', pattern), eb('detail', 'ilike', pattern), ...(reasons.length > 0 ? [eb('reason', 'in', reasons)] : [])]),
    );
  }
  if (after) q = q.where((eb) => eb(eb.refTuple('created_at', 'id'), '<', eb.tuple(after[0], after[1])));
  return (await q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit + 1).execute()) as SuppressionRow[];
}
