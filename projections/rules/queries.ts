import { sql, type Kysely, type Selectable } from 'kysely';
import type { RuleToEvaluate } from '../../domain/rules/evaluate.ts';
import { DEFAULT_TIME_ZONE } from '../../domain/shared/time-zones.ts';
import { type Reach, withinReach } from '../addresses/queries.ts';
import type { ReadModels } from '../tables.ts';
import type { RulesTables } from './tables.ts';

type Db = Kysely<ReadModels>;

export type RuleRow = Selectable<RulesTables['rules']>;

/** A narrowed credential reaches the rules of the addresses it holds, and of its whole domains (catch-alls included). */
export async function findRule(
  db: Db,
  workspaceId: string,
  reach: Reach | null,
  id: string,
): Promise<RuleRow | undefined> {
  const { rows } = await sql<RuleRow>`SELECT r.* FROM rules r
    WHERE r.workspace_id = ${workspaceId} AND r.id = ${id} ${withinReach(reach, 'r.address', 'r.domain')}`.execute(db);
  return rows[0];
}

/** One mailbox's rules in the order they run: position, then createdAt, then id, after the cursor's. */
export async function listRules(
  db: Db,
  workspaceId: string,
  filter: { address: string; enabled?: boolean },
  limit: number,
  after: [number, string, string] | null,
): Promise<RuleRow[]> {
  const { rows } = await sql<RuleRow>`SELECT r.* FROM rules r
    WHERE r.workspace_id = ${workspaceId} AND r.address = ${filter.address}
      ${filter.enabled === undefined ? sql`` : sql`AND r.enabled = ${filter.enabled}`}
      ${after ? sql`AND (r.position, r.created_at, r.id) > (${after[0]}, ${after[1]}::timestamptz, ${after[2]})` : sql``}
    ORDER BY r.position, r.created_at, r.id LIMIT ${limit + 1}`.execute(db);
  return rows;
}

/** The enabled rules of a mailbox as the evaluator takes them (it orders them): for a run or a dry run. */
export async function rulesOfMailbox(db: Db, workspaceId: string, address: string): Promise<RuleToEvaluate[]> {
  const { rows } = await sql<RuleRow>`SELECT r.* FROM rules r
    WHERE r.workspace_id = ${workspaceId} AND r.address = ${address} AND r.enabled`.execute(db);
  return rows.map((r) => ({
    ruleId: r.id,
    name: r.name,
    description: r.description,
    enabled: r.enabled,
    match: r.match,
    conditions: r.conditions,
    actions: r.actions,
    stopProcessing: r.stop_processing,
    position: r.position,
    createdAt: r.created_at.toISOString(),
  }));
}

/**
 * The IANA zone a mailbox's rules read `hour` and `weekday` in: its address's, or for `*@<domain>`
 * its domain's catch-all's. A mailbox that is gone reads UTC: it has no rules to run.
 */
export async function mailboxTimeZone(db: Db, workspaceId: string, mailbox: string): Promise<string> {
  const row = mailbox.startsWith('*@')
    ? await db
        .selectFrom('domains')
        .select('catch_all_time_zone as zone')
        .where('workspace_id', '=', workspaceId)
        .where('domain', '=', mailbox.slice(2))
        .executeTakeFirst()
    : await db
        .selectFrom('addresses')
        .select('time_zone as zone')
        .where('workspace_id', '=', workspaceId)
        .where('address', '=', mailbox)
        .where('registered', '=', true)
        .executeTakeFirst();
  return row?.zone ?? DEFAULT_TIME_ZONE;
}

/** A filed message of the workspace by its id (`mes_`), as a dry run reads it. */
export async function findFiledMessage(db: Db, workspaceId: string, id: string) {
  return db
    .selectFrom('thread_messages')
    .select(['id', 'address', 'summary', 'spam', 'mail_from', 'received_at'])
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .executeTakeFirst();
}
