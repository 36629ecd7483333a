import type pg from 'pg';
import { sql, type Kysely } from 'kysely';
import type { EventStore } from '../infra/eventstore/port.ts';
import type { ProjectionRunner } from './runner.ts';
import type { Projector } from './projector.ts';

const BATCH = 5000;

export interface RebuildResult {
  name: string;
  events: number;
  position: number;
  seconds: number;
}

/**
 * Rebuilds a read model from position 0 into a scratch schema while the live one keeps serving,
 * then swaps the tables in. The swap holds the projector's checkpoint row, which the live
 * projector takes first in each batch, so the live one pauses for the swap and resumes on the new
 * tables from exactly where the rebuilt copy stands.
 */
export async function rebuildProjection(
  db: Kysely<any>,
  pool: pg.Pool,
  store: EventStore,
  runner: ProjectionRunner,
  projector: Projector,
  options: { swap?: boolean; schema?: string } = {},
): Promise<RebuildResult> {
  if (projector.rebuildable === false) throw new Error(`${projector.name} is the state of a process manager and is never rebuilt`);
  const started = process.hrtime.bigint();
  const schema = options.schema ?? `rebuild_${projector.name.replace(/\W/g, '_')}`;
  await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`);
  await pool.query(projector.ddl(schema));
  const scoped = db.withSchema(schema);
  let position = 0;
  let applied = 0;
  const catchUp = async (until: number) => {
    for (;;) {
      const events = (await store.readAll({ after: position, limit: BATCH })).filter((e) => e.position <= until);
      if (events.length === 0) return;
      const relevant = events.filter((e) => projector.handles.includes(e.type));
      await scoped.transaction().execute(async (trx) => {
        await sql`SET LOCAL synchronous_commit = off`.execute(trx);
        // Raw SQL in a projector names tables unqualified: point it at the scratch schema too.
        await sql.raw(`SET LOCAL search_path TO ${schema}, public`).execute(trx);
        if (projector.applyBatch) await projector.applyBatch(trx, relevant.map((e) => runner.decode(e)));
        else for (const e of relevant) await projector.apply(trx, runner.decode(e));
      });
      applied += relevant.length;
      position = events[events.length - 1]!.position;
    }
  };
  // Never pass the live checkpoint: the live projector resumes from it on the swapped tables.
  const { rows: cp } = await pool.query('SELECT position FROM projection_checkpoints WHERE name = $1', [projector.name]);
  await catchUp(options.swap === false ? await store.headPosition() : Number(cp[0]?.position ?? 0));
  if (projector.indexes) await pool.query(projector.indexes(schema));
  if (options.swap === false) {
    return { name: projector.name, events: applied, position, seconds: Number(process.hrtime.bigint() - started) / 1e9 };
  }
  await db.transaction().execute(async (trx) => {
    const { rows } = await sql<{ position: number }>`
      SELECT position FROM projection_checkpoints WHERE name = ${projector.name} FOR UPDATE`.execute(trx);
    const live = Number(rows[0]?.position ?? 0);
    await catchUp(live);
    for (const t of projector.tables) {
      await sql.raw(`DROP TABLE public.${t} CASCADE; ALTER TABLE ${schema}.${t} SET SCHEMA public`).execute(trx);
    }
    await sql.raw(`DROP SCHEMA ${schema}`).execute(trx);
    position = live;
  });
  return { name: projector.name, events: applied, position, seconds: Number(process.hrtime.bigint() - started) / 1e9 };
}
