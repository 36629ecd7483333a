import { sql, type Kysely, type Selectable } from 'kysely';
import type { ContactEventsTables } from './tables.ts';
import type { ReadModels } from '../tables.ts';

type Db = Kysely<ReadModels>;

export type ContactEventRow = Selectable<ContactEventsTables['contact_events']>;

/** Most recent first by occurrence (id breaks ties); `after` is the place of the last row of the previous page. */
export async function listContactEvents(
  db: Db,
  workspaceId: string,
  contactId: string,
  options: { name?: string; limit: number; after: { occurredAt: Date; id: string } | null },
): Promise<ContactEventRow[]> {
  const { rows } = await sql<ContactEventRow>`SELECT * FROM contact_events
    WHERE workspace_id = ${workspaceId} AND contact_id = ${contactId}
      ${options.name !== undefined ? sql`AND name = ${options.name}` : sql``}
      ${options.after ? sql`AND (occurred_at, id) < (${options.after.occurredAt}, ${options.after.id})` : sql``}
    ORDER BY occurred_at DESC, id DESC LIMIT ${options.limit + 1}`.execute(db);
  return rows;
}

/** An event of the workspace by id: a cursor is checked against the list it came from. */
export async function findContactEvent(db: Db, workspaceId: string, id: string): Promise<ContactEventRow | undefined> {
  const { rows } =
    await sql<ContactEventRow>`SELECT * FROM contact_events WHERE workspace_id = ${workspaceId} AND id = ${id}`.execute(
      db,
    );
  return rows[0];
}

/** Distinct names in byte order (the column's collation is "C"), at most `limit`. */
export async function listEventNames(db: Db, workspaceId: string, limit = 100): Promise<string[]> {
  const { rows } = await sql<{
    name: string;
  }>`SELECT name FROM contact_event_names WHERE workspace_id = ${workspaceId} ORDER BY name LIMIT ${limit}`.execute(db);
  return rows.map((r) => r.name);
}
