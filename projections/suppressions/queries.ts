import { sql, type Kysely, type Selectable } from 'kysely';
import { SUPPRESSION_REASONS, type SuppressionReason } from '../../domain/suppressions/events.ts';
import type { SuppressionsTables } from './tables.ts';
import type { ReadModels } from '../tables.ts';

type Db = Kysely<ReadModels>;

export type SuppressionRow = Selectable<SuppressionsTables['suppressions']>;

export interface SuppressionFilter {
  /** Substring of the address, reason or detail, any case; `%` and `_` match themselves. */
  q?: string;
  reason?: SuppressionReason;
}

export async function findSuppression(db: Db, workspaceId: string, id: string): Promise<SuppressionRow | undefined> {
  return db
    .selectFrom('suppressions')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/** The suppression of one address (lower-cased), if it has one: an address is suppressed once. */
export async function findSuppressionByEmail(
  db: Db,
  workspaceId: string,
  email: string,
): Promise<SuppressionRow | undefined> {
  return db
    .selectFrom('suppressions')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('email', '=', email)
    .executeTakeFirst();
}

/**
 * Newest first, after the cursor's (createdAt, id). The row comparison keeps the cursor an index
 * bound, so a page deep in a million rows costs what the first one does.
 */
export async function listSuppressions(
  db: Db,
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
      eb.or([
        eb('email', 'ilike', pattern),
        eb('detail', 'ilike', pattern),
        ...(reasons.length > 0 ? [eb('reason', 'in', reasons)] : []),
      ]),
    );
  }
  if (after) q = q.where(sql<boolean>`(created_at, id) < (${after[0]}, ${after[1]})`);
  return q
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
}
