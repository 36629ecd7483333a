import { sql, type Kysely, type Selectable } from 'kysely';
import type { ReadModels } from '../tables.ts';
import type { SendingStreamsTables } from './tables.ts';

type Db = Kysely<ReadModels>;
export type SendingStreamStateRow = Selectable<SendingStreamsTables['sending_stream_states']>;

/** Each lane's counts summed over the days from `fromDay` (a UTC date), for lanes with any. */
export async function streamCounts(
  db: Db,
  workspaceId: string,
  fromDay: string,
): Promise<{ stream: string; sent: number; bounced: number; complained: number }[]> {
  const { rows } = await sql<{ stream: string; sent: number; bounced: number; complained: number }>`
    SELECT stream, sum(sent)::int AS sent, sum(bounced)::int AS bounced, sum(complained)::int AS complained
    FROM sending_stream_days WHERE workspace_id = ${workspaceId} AND day >= ${fromDay}::date GROUP BY stream`.execute(
    db,
  );
  return rows;
}

export async function streamStates(db: Db, workspaceId: string): Promise<SendingStreamStateRow[]> {
  return db.selectFrom('sending_stream_states').selectAll().where('workspace_id', '=', workspaceId).execute();
}
