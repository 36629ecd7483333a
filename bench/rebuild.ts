import { rebuildProjection } from '../projections/rebuild.ts';
import { openSystem } from '../system.ts';
import { emit, note, round } from './support.ts';
import { prepareSeeded, ROWS, type Seeded } from './suppressions-list.ts';

/**
 * An operator's online rebuild of the suppressions read model (into a scratch schema, then swap)
 * from the seeded events, while the server (the live projector) keeps running, as
 * `npm run cli -- projections rebuild suppressions` does it. Reuses the database the list
 * benchmark seeded when it ran just before; seeds its own otherwise.
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
        target: '>= 50000 events/s',
      });
    } finally {
      await system.close();
    }
  } finally {
    await s.server.close().catch(() => {});
    await s.database.drop();
  }
}
