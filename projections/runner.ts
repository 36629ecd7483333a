import type pg from 'pg';
import { sql, type Kysely } from 'kysely';
import type { EventStore, RecordedEvent, Subscription } from '../infra/eventstore/port.ts';
import type { EventRegistry } from '../domain/shared/events.ts';
import type { ProjectedEvent, Projector } from './projector.ts';

const LEADER_LOCK = 72_626_002;
const WAIT_TIMEOUT_MS = 10_000;

const CHECKPOINTS = `
CREATE TABLE IF NOT EXISTS projection_checkpoints (
  name text PRIMARY KEY,
  position bigint NOT NULL,
  version integer NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);`;

export interface ProjectionStatus {
  name: string;
  version: number;
  position: number;
  head: number;
  lag: number;
  running: boolean;
}

/**
 * Runs every projector from its checkpoint. One process at a time projects (a session advisory
 * lock elects it); the others only read the checkpoints, so several servers can share a database.
 */
export class ProjectionRunner {
  private readonly positions = new Map<string, number>();
  private readonly subscriptions: Subscription[] = [];
  private leaderClient: pg.PoolClient | null = null;
  private leaderRetry: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(
    private readonly db: Kysely<any>,
    private readonly pool: pg.Pool,
    private readonly store: EventStore,
    private readonly registry: EventRegistry,
    readonly projectors: readonly Projector[],
  ) {}

  /** Creates checkpoint rows and tables; a projector whose version changed starts over. */
  async migrate(): Promise<void> {
    await this.pool.query(CHECKPOINTS);
    for (const p of this.projectors) {
      const { rows } = await this.pool.query('SELECT version FROM projection_checkpoints WHERE name = $1', [p.name]);
      if (rows[0]?.version === p.version || (rows[0] && p.rebuildable === false)) {
        if (rows[0].version !== p.version) await this.pool.query('UPDATE projection_checkpoints SET version = $2 WHERE name = $1', [p.name, p.version]);
        await this.pool.query(p.ddl('public') + (p.indexes?.('public') ?? ''));
        continue;
      }
      const client = await this.pool.connect();
      try {
        await client.query('BEGIN');
        for (const t of p.tables) await client.query(`DROP TABLE IF EXISTS public.${t} CASCADE`);
        await client.query(p.ddl('public') + (p.indexes?.('public') ?? ''));
        await client.query(
          `INSERT INTO projection_checkpoints (name, position, version) VALUES ($1, 0, $2)
           ON CONFLICT (name) DO UPDATE SET position = 0, version = $2, updated_at = now()`,
          [p.name, p.version],
        );
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw error;
      } finally {
        client.release();
      }
    }
  }

  async start(): Promise<void> {
    await this.tryLead();
  }

  private async tryLead(): Promise<void> {
    if (this.stopped) return;
    const client = await this.pool.connect();
    const { rows } = await client.query('SELECT pg_try_advisory_lock($1) AS ok', [LEADER_LOCK]);
    if (!rows[0].ok) {
      client.release();
      this.leaderRetry = setTimeout(() => void this.tryLead().catch(() => {}), 1000);
      return;
    }
    this.leaderClient = client;
    for (const p of this.projectors) {
      const { rows: cp } = await this.pool.query('SELECT position FROM projection_checkpoints WHERE name = $1', [p.name]);
      const after = cp[0]?.position ?? 0;
      this.positions.set(p.name, after);
      this.subscriptions.push(
        this.store.subscribeToAll({
          after,
          batchSize: 1000,
          onEvents: (events) => this.applyBatch(p, events),
          onError: (error) => console.error(`projection ${p.name}:`, error),
        }),
      );
    }
  }

  private readonly persistedAt = new Map<string, number>();

  private async applyBatch(p: Projector, events: RecordedEvent[]): Promise<void> {
    const last = events[events.length - 1]!.position;
    const relevant = events.filter((e) => p.handles.includes(e.type));
    // A batch of events this projector ignores changes no table: its checkpoint is written at most
    // once a second (for `projections status`), not once per append of every other aggregate.
    if (relevant.length === 0 && Date.now() - (this.persistedAt.get(p.name) ?? 0) < 1000) {
      this.positions.set(p.name, last);
      this.notify();
      return;
    }
    this.persistedAt.set(p.name, Date.now());
    await this.db.transaction().execute(async (trx) => {
      // The checkpoint row is locked first, so an operator's swap (which locks it too) never
      // deadlocks against table locks taken by this batch. Read models are derived: a crash may
      // lose the last few ms of this work, and the checkpoint committed with it replays exactly
      // that, so the transaction skips the WAL flush (set in the same statement, a round trip less).
      await sql`UPDATE projection_checkpoints SET position = ${last}, updated_at = now()
        WHERE name = ${p.name} AND (SELECT set_config('synchronous_commit', 'off', true)) IS NOT NULL`.execute(trx);
      if (p.applyBatch) await p.applyBatch(trx, relevant.map((e) => this.decode(e)));
      else for (const e of relevant) await p.apply(trx, this.decode(e));
    });
    this.positions.set(p.name, last);
    this.notify();
  }

  decode(e: RecordedEvent): ProjectedEvent {
    const { type, data } = this.registry.decode(e.type, e.version, e.data);
    return { type, data, streamId: e.streamId, revision: e.revision, position: e.position, recordedAt: e.recordedAt, metadata: e.metadata };
  }

  private waiters = new Set<() => void>();

  private notify(): void {
    for (const w of this.waiters) w();
  }

  /** Resolves once every projector that handles one of `eventTypes` has passed `position`. */
  async waitFor(position: number, eventTypes: readonly string[]): Promise<void> {
    const concerned = this.projectors.filter((p) => eventTypes.some((t) => p.handles.includes(t)));
    if (concerned.length === 0) return;
    const deadline = Date.now() + WAIT_TIMEOUT_MS;
    while (Date.now() < deadline) {
      const behind = this.leaderClient
        ? concerned.filter((p) => (this.positions.get(p.name) ?? 0) < position)
        : await this.behindInDatabase(concerned, position);
      if (behind.length === 0) return;
      await new Promise<void>((resolve) => {
        const done = () => { clearTimeout(timer); this.waiters.delete(done); resolve(); };
        const timer = setTimeout(done, this.leaderClient ? 100 : 10);
        this.waiters.add(done);
      });
    }
    throw new Error(`read models did not reach position ${position} within ${WAIT_TIMEOUT_MS} ms`);
  }

  private async behindInDatabase(concerned: Projector[], position: number): Promise<Projector[]> {
    const { rows } = await this.pool.query('SELECT name FROM projection_checkpoints WHERE name = ANY($1) AND position >= $2', [
      concerned.map((p) => p.name),
      position,
    ]);
    const done = new Set(rows.map((r) => r.name));
    return concerned.filter((p) => !done.has(p.name));
  }

  async status(): Promise<ProjectionStatus[]> {
    const head = await this.store.headPosition();
    const { rows } = await this.pool.query('SELECT name, position, version FROM projection_checkpoints');
    const byName = new Map(rows.map((r) => [r.name, r]));
    return this.projectors.map((p) => {
      const row = byName.get(p.name);
      const position = row?.position ?? 0;
      return { name: p.name, version: p.version, position, head, lag: Math.max(0, head - position), running: this.leaderClient !== null };
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.leaderRetry) clearTimeout(this.leaderRetry);
    await Promise.all(this.subscriptions.splice(0).map((s) => s.close()));
    if (this.leaderClient) {
      for (const [name, position] of this.positions) {
        await this.pool.query('UPDATE projection_checkpoints SET position = $2, updated_at = now() WHERE name = $1 AND position < $2', [name, position]);
      }
      await this.leaderClient.query('SELECT pg_advisory_unlock($1)', [LEADER_LOCK]).catch(() => {});
      this.leaderClient.release();
      this.leaderClient = null;
    }
  }
}
