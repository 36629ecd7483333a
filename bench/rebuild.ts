import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type pg from 'pg';
import { rebuildProjection } from '../projections/rebuild.ts';
import { openSystem } from '../system.ts';
import { emit, note, round } from './support.ts';
import { prepareSeeded, ROWS, type Seeded } from './suppressions-list.ts';

/**
 * An operator's online rebuild of the suppressions read model (into a scratch schema, then swap)
 * from the seeded events, while the server (the live projector) keeps running, as
 * `npm run cli -- projections rebuild suppressions` does it. Reuses the database the list
 * benchmark seeded when it ran just before; seeds its own otherwise. Beside it, its floor: the
 * same rows loaded with COPY into an unindexed table (`copyFloor`).
 */
export async function rebuildBench(seeded: Seeded | null): Promise<void> {
  const s = seeded ?? (await prepareSeeded());
  try {
    const system = await openSystem(s.database.url, { project: false, poolSize: 4 });
    try {
      const projector = system.runner.projectors.find((p) => p.name === 'suppressions')!;
      const { count: before } = (await system.database.pool.query('SELECT count(*)::int AS count FROM suppressions'))
        .rows[0];
      note(`rebuild: suppressions from ${ROWS} events (swap)`);
      const { db, pool } = system.database;
      const result = await rebuildProjection(db, pool, system.store, system.runner, projector, { swap: true });
      const { count: after } = (await pool.query('SELECT count(*)::int AS count FROM suppressions')).rows[0];
      await emit({
        bench: 'rebuild.suppressions',
        events: result.events,
        seconds: round(result.seconds, 1),
        eventsPerSec: round(result.events / result.seconds),
        rowsBefore: before,
        rowsAfter: after,
        swap: true,
        target: '>= 100000 events/s',
      });
      await copyFloor(pool);
    } finally {
      await system.close();
    }
  } finally {
    await s.server.close().catch(() => {});
    await s.database.drop();
  }
}

/**
 * The floor beside the rebuild: the read model's rows loaded with PostgreSQL's COPY into a table
 * of the same columns without keys or indexes, from a file the server wrote itself (so no client
 * and no decoding stand in the way). The server runs on this machine, as every benchmark assumes.
 */
async function copyFloor(pool: pg.Pool): Promise<void> {
  const file = path.join(os.tmpdir(), `wms_rebuild_floor_${crypto.randomBytes(4).toString('hex')}.copy`);
  try {
    await pool.query(`COPY (SELECT * FROM suppressions) TO '${file}'`);
    await pool.query('CREATE TABLE rebuild_floor (LIKE suppressions)');
    const started = process.hrtime.bigint();
    const { rowCount } = await pool.query(`COPY rebuild_floor FROM '${file}'`);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    await emit({
      bench: 'rebuild.copy-floor',
      rows: rowCount,
      seconds: round(seconds, 1),
      eventsPerSec: round((rowCount ?? 0) / seconds),
      note: 'COPY of the rebuilt rows into an unindexed table of the same columns, from a server-side file',
    });
  } finally {
    await pool.query('DROP TABLE IF EXISTS rebuild_floor');
    fs.rmSync(file, { force: true });
  }
}
