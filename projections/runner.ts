import type pg from 'pg';
import { sql, type Kysely } from 'kysely';
import type { EventStore, RecordedEvent, Subscription } from '../infra/eventstore/port.ts';
import type { EventRegistry } from '../domain/shared/events.ts';
import type { EventMetadata, Follower, ProjectedEvent, Projector, Reactor } from './projector.ts';
import { recordingDb, type Recording, type WriteTransactions } from './pipeline.ts';
import { rebuildProjection } from './rebuild.ts';

const LEADER_LOCK = 72_626_002;
/** How long a write waits for its read models by default (`ProjectionRunnerOptions.readModelDeadlineMs`). */
export const DEFAULT_READ_MODEL_DEADLINE_MS = 10_000;
/** Between two tries at the leader lock, and at most one error report per projector this often. */
const RETRY_LEAD_MS = 1000;
const ERROR_REPORT_MS = 10_000;
/**
 * How often the leader says its followers run, and how old the last word may be for `status` to
 * believe it: three beats, so one slow write under load does not read as a dead worker.
 */
const HEARTBEAT_MS = 5000;
const HEARTBEAT_FRESH_SECONDS = 15;

/**
 * Moves checkpoints written outside a batch's transaction ($1 names, $2 positions), only forward: a
 * checkpoint another leader moved further stays where it is. Without the WAL flush, as a batch's
 * checkpoint (`moveCheckpoint`): one lost in a crash replays events that changed nothing.
 * Prepared (`name`): it runs for every batch of arriving mail, its parse cost as much as its run.
 */
const ADVANCE_CHECKPOINTS = {
  name: 'advance_checkpoints',
  text: `UPDATE projection_checkpoints c SET position = u.position, updated_at = now()
    FROM unnest($1::text[], $2::bigint[]) AS u(name, position)
    WHERE c.name = u.name AND c.position < u.position
      AND (SELECT set_config('synchronous_commit', 'off', true)) IS NOT NULL`,
};

/** What `projection_checkpoint_move` fails with when the checkpoint is no longer where the batch began. */
const CHECKPOINT_MOVED = 'WMS01';

const CHECKPOINTS = `
CREATE TABLE IF NOT EXISTS projection_checkpoints (
  name text PRIMARY KEY,
  position bigint NOT NULL,
  version integer NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS projection_heartbeats (
  name text PRIMARY KEY,
  worker text NOT NULL,
  beat_at timestamptz NOT NULL
);
-- A batch's checkpoint move as the first statement of a transaction sent whole, which cannot
-- look at an answer before the next statement goes: not moved (another process projected these
-- events), it fails, and the transaction with it. Without the WAL flush, as \`moveCheckpoint\`.
CREATE OR REPLACE FUNCTION projection_checkpoint_move(p_name text, p_from bigint, p_last bigint)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  UPDATE projection_checkpoints SET position = p_last, updated_at = now() WHERE name = p_name AND position <= p_from;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'projection % has moved past %', p_name, p_from USING ERRCODE = '${CHECKPOINT_MOVED}';
  END IF;
  PERFORM set_config('synchronous_commit', 'off', true);
END $$;`;

export interface ProjectionStatus {
  name: string;
  kind: 'projector' | 'reactor';
  version: number;
  /** Where it stands in the log: its checkpoint (the leader's own position, where this process leads). */
  position: number;
  head: number;
  /** Events of the types it handles after `position`: the work it has left, 0 when caught up. */
  lag: number;
  /**
   * Events of any type after `position`. Its checkpoint may stay behind events it does not handle
   * (those are written at most once a second), so this is not work left; `lag` is.
   */
  behind: number;
  /** Whether a live process runs it: the leader's heartbeat for it is fresh. */
  running: boolean;
  /** `host:pid` of the process whose heartbeat it is, fresh or not; null when none ran it or it stopped cleanly. */
  worker: string | null;
  heartbeatAt: string | null;
}

export interface ProjectionRunnerOptions {
  /** How long `waitFor` waits before it gives up (or asks its caller what to do). */
  readModelDeadlineMs?: number;
  /** Which process its heartbeats come from, for the operator reading `projections status` (`host:pid`). */
  worker?: string;
  /**
   * Events of its types a projector must be behind by at start for `farBehind` to rebuild it
   * instead of catching up (default 100,000).
   */
  bulkCatchUpEvents?: number;
  /** A reactor committed a batch of events it handles: it may have written these tables. */
  onReactorWrote?(tables: readonly string[]): void;
  /** Where the batches of `pipelined` projectors go, in one round trip each; without, they run as the others do. */
  writeTransactions?: WriteTransactions;
}

/** What a waiter does when the read models pass the deadline. */
export interface ReadModelWait {
  /** true: wait on, with no deadline; false (or absent): `waitFor` rejects. */
  onDeadline?(): boolean;
}

/**
 * Runs every projector and reactor (both follow the log: "followers") from its checkpoint. One
 * process at a time projects (a session advisory lock elects it); the others only read the
 * checkpoints, so several servers can share a database.
 *
 * The lock lives as long as the leader's session. When that session ends (PostgreSQL restarted, the
 * backend terminated, the network cut), another process may take the lock at once, so this one
 * stops projecting that instant and tries for the lock again until it gets it back, going on from
 * the checkpoints. A batch already under way when the session ended is fenced by its checkpoint:
 * it commits only if the checkpoint still stands where this process left it, so two processes never
 * both apply an event, whatever the timing.
 */
export class ProjectionRunner {
  private readonly positions = new Map<string, number>();
  private subscriptions: Subscription[] = [];
  private leaderClient: pg.PoolClient | null = null;
  /** Counts leaderships: a batch handed to an earlier one is not applied. */
  private term = 0;
  private leaderRetry: NodeJS.Timeout | null = null;
  private heartbeat: NodeJS.Timeout | null = null;
  private leading: Promise<void> = Promise.resolve();
  private unsubscribing: Promise<void> = Promise.resolve();
  private readonly reportedAt = new Map<string, number>();
  /** Projectors being rebuilt to catch up (`catchUpInBulk`), one after another. */
  private bulkCatchUps: Promise<void> = Promise.resolve();
  private stopped = false;
  private readonly deadlineMs: number;
  private readonly bulkCatchUpEvents: number;
  private readonly worker: string;
  private readonly onReactorWrote: (tables: readonly string[]) => void;
  private readonly writeTransactions: WriteTransactions | undefined;
  /**
   * Per `pipelined` projector, when there is somewhere to send its batches: the database they are
   * recorded on (one batch at a time each).
   */
  private readonly recorders = new Map<string, Recording>();
  /** Projectors, then reactors: everything that follows the log here. */
  private readonly followers: readonly Follower[];
  /** The event types each follower handles, by name. */
  private readonly handled = new Map<string, ReadonlySet<string>>();
  /** Per follower, the event types whose writes wait for it (`ReactorSpec.awaitedFor`). */
  private readonly awaited = new Map<string, ReadonlySet<string>>();

  constructor(
    private readonly db: Kysely<unknown>,
    private readonly pool: pg.Pool,
    private readonly store: EventStore,
    private readonly registry: EventRegistry,
    /** The read models: what `projections rebuild` may rebuild. */
    readonly projectors: readonly Projector[],
    readonly reactors: readonly Reactor[],
    options: ProjectionRunnerOptions = {},
  ) {
    this.deadlineMs = options.readModelDeadlineMs ?? DEFAULT_READ_MODEL_DEADLINE_MS;
    this.bulkCatchUpEvents = options.bulkCatchUpEvents ?? 100_000;
    this.worker = options.worker ?? `pid ${process.pid}`;
    this.onReactorWrote = options.onReactorWrote ?? (() => {});
    this.writeTransactions = options.writeTransactions;
    this.followers = [...projectors, ...reactors];
    for (const f of this.followers) {
      const handled = new Set<string>(f.handles);
      this.handled.set(f.name, handled);
      this.awaited.set(f.name, f.kind === 'reactor' && f.awaitedFor ? new Set(f.awaitedFor) : handled);
      if (f.kind === 'projector' && f.pipelined && this.writeTransactions) this.recorders.set(f.name, recordingDb());
    }
  }

  private follows(f: Follower, type: string): boolean {
    return this.handled.get(f.name)!.has(type);
  }

  /**
   * Creates checkpoint rows and tables. A projector whose version changed starts over from
   * position 0; a reactor's tables are the state of work done outside, so it only runs its ddl.
   */
  async migrate(): Promise<void> {
    await this.pool.query(CHECKPOINTS);
    for (const p of this.followers) {
      const { rows } = await this.pool.query('SELECT version FROM projection_checkpoints WHERE name = $1', [p.name]);
      if (rows[0]?.version === p.version || (rows[0] && p.kind === 'reactor')) {
        if (rows[0].version !== p.version)
          await this.pool.query('UPDATE projection_checkpoints SET version = $2 WHERE name = $1', [p.name, p.version]);
        await this.pool.query(p.ddl('public') + (indexesOf(p) ?? ''));
        continue;
      }
      const client = await this.pool.connect();
      try {
        await client.query('BEGIN');
        for (const t of p.tables) await client.query(`DROP TABLE IF EXISTS public.${t} CASCADE`);
        await client.query(p.ddl('public') + (indexesOf(p) ?? ''));
        await client.query(
          `INSERT INTO projection_checkpoints (name, position, version) VALUES ($1, 0, $2)
           ON CONFLICT (name) DO UPDATE SET position = 0, version = $2, updated_at = now()`,
          [p.name, p.version],
        );
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      } finally {
        client.release();
      }
    }
  }

  async start(): Promise<void> {
    this.leading = this.tryLead();
    await this.leading;
  }

  private retryLead(): void {
    if (this.stopped) return;
    this.leaderRetry = setTimeout(() => {
      this.leaderRetry = null;
      this.leading = this.tryLead();
    }, RETRY_LEAD_MS);
  }

  private async tryLead(): Promise<void> {
    await this.unsubscribing;
    if (this.stopped) return;
    let client: pg.PoolClient | null = null;
    try {
      client = await this.pool.connect();
      const { rows } = await client.query('SELECT pg_try_advisory_lock($1) AS ok', [LEADER_LOCK]);
      if (!rows[0].ok) {
        client.release();
        client = null;
      }
    } catch (error) {
      // A connection that failed is dropped, not pooled; the database may be away for a while.
      client?.release(error as Error);
      client = null;
      this.report('leader lock', error);
    }
    if (!client) return this.retryLead();
    if (this.stopped) {
      await client.query('SELECT pg_advisory_unlock($1)', [LEADER_LOCK]).catch(() => {});
      client.release();
      return;
    }
    const term = ++this.term;
    this.leaderClient = client;
    client.on('error', () => this.loseLead(term));
    try {
      const { rows } = await this.pool.query('SELECT name, position FROM projection_checkpoints WHERE name = ANY($1)', [
        this.followers.map((p) => p.name),
      ]);
      if (term !== this.term) return;
      const checkpoints = new Map(rows.map((r) => [r.name as string, Number(r.position)]));
      const head = await this.store.headPosition();
      if (term !== this.term) return;
      for (const p of this.followers) {
        const after = checkpoints.get(p.name) ?? 0;
        this.positions.set(p.name, after);
        if (p.kind === 'projector' && (await this.farBehind(p, after, head))) this.catchUpInBulk(p, term, after);
        else this.follow(p, term, after);
      }
      await this.beat(term);
      this.heartbeat = setInterval(() => void this.beat(term), HEARTBEAT_MS);
    } catch (error) {
      this.report('projections', error);
      this.loseLead(term);
    }
  }

  private follow(p: Follower, term: number, after: number): void {
    this.subscriptions.push(
      this.store.subscribeToAll({
        after,
        batchSize: 1000,
        types: p.handles,
        onEvents: (events, upTo) => this.applyBatch(p, term, events, upTo),
        onError: (error) => this.report(`projection ${p.name}`, error),
      }),
    );
  }

  /**
   * Whether a projector is better rebuilt than caught up: its rebuild replays in place (a bulk
   * load, a store that shows the log in its database), enough events of its types lie past its
   * checkpoint (`bulkCatchUpEvents`), and so does at least half the log. A rebuild loads bare
   * tables and builds their indexes once; catching up keeps every index row by row, which for a
   * million suppressions took 83 s where the rebuild took 16 (docs/benchmarks.md).
   */
  private async farBehind(p: Projector, after: number, head: number): Promise<boolean> {
    const enough = this.bulkCatchUpEvents;
    if (!p.bulkLoad || !this.store.eventsInPlace || head - after < enough || after > head / 2) return false;
    return (await countHandled(this.store, p.handles, after, head)) >= enough;
  }

  /**
   * Rebuilds a projector far behind and swaps it in, moving its checkpoint to where the rebuild
   * stands, then follows the log from there. Such runs go one after another (each takes both
   * cores); the projector's readers wait as they would for its catch-up. A rebuild that fails
   * (another process took the lead and moved the checkpoint, say) leaves the tables as they were,
   * and the projector catches up from its checkpoint.
   */
  private catchUpInBulk(p: Projector, term: number, from: number): void {
    this.bulkCatchUps = this.bulkCatchUps.then(async () => {
      let position = from;
      if (term === this.term && !this.stopped) {
        try {
          position = (await rebuildProjection(this.db, this.pool, this.store, this, p, { takeOver: { from } }))
            .position;
        } catch (error) {
          this.report(`projection ${p.name} (bulk catch-up)`, error);
        }
      }
      if (term !== this.term || this.stopped) return;
      this.positions.set(p.name, position);
      this.notify();
      this.follow(p, term, position);
    });
  }

  /**
   * The leader's session ended, so the lock is gone with it: stop projecting now (another process
   * may be taking over) and try for the lock again once the subscriptions are closed.
   */
  private loseLead(term: number): void {
    if (term !== this.term || !this.leaderClient) return;
    const client = this.leaderClient;
    this.leaderClient = null;
    this.term++;
    // Its rows go stale on their own: deleting them now could remove the next leader's, which
    // may already have taken the lock from another pool of this very process.
    this.stopBeating();
    client.release(new Error('the leader session ended'));
    if (!this.stopped)
      console.error('projections: the leader session ended; projecting stops until this process holds the lock again');
    this.unsubscribing = Promise.all(this.subscriptions.splice(0).map((s) => s.close())).then(() => {});
    this.wakeAll();
    this.retryLead();
  }

  /**
   * Says, for every follower this leader runs, that it runs: what `projections status` reads from
   * another process to tell a live worker from a checkpoint nobody moves.
   */
  private async beat(term: number): Promise<void> {
    if (term !== this.term) return;
    try {
      await this.pool.query(
        `INSERT INTO projection_heartbeats (name, worker, beat_at) SELECT unnest($1::text[]), $2, now()
         ON CONFLICT (name) DO UPDATE SET worker = excluded.worker, beat_at = excluded.beat_at`,
        [this.followers.map((f) => f.name), this.worker],
      );
    } catch (error) {
      this.report('projection heartbeat', error);
    }
  }

  private stopBeating(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
  }

  /** Whether this process holds the projection lock and runs the followers now. */
  get leads(): boolean {
    return this.leaderClient !== null;
  }

  /** Logs a failure of a projector's loop at most once per ERROR_REPORT_MS, not on every retry. */
  private report(what: string, error: unknown): void {
    const now = Date.now();
    if (now - (this.reportedAt.get(what) ?? 0) < ERROR_REPORT_MS) return;
    this.reportedAt.set(what, now);
    console.error(`${what}:`, error);
  }

  private readonly persistedAt = new Map<string, number>();
  /** Followers whose skipped checkpoint write is due (`persistLater`). */
  private readonly trailing = new Map<string, NodeJS.Timeout>();

  private async applyBatch(p: Follower, term: number, batch: RecordedEvent[], upTo: number): Promise<void> {
    if (term !== this.term) throw new Error('this process no longer leads the projections');
    const from = this.positions.get(p.name) ?? 0;
    if (upTo <= from) return;
    const last = upTo;
    // After a resync (below) the subscription may hand over events the checkpoint has passed.
    const handled = batch.filter((e) => e.position > from && this.follows(p, e.type)).map((e) => this.decode(e));
    const writes = p.kind === 'projector' ? p.writes : undefined;
    let relevant = writes ? handled.filter(writes) : handled;
    if (relevant.length > 0 && p.kind === 'reactor' && p.quiet && (await p.quiet(this.db, relevant))) {
      if (term !== this.term) return;
      relevant = [];
    }
    // A batch of events this projector ignores changes no table: its checkpoint is written at most
    // once a second, not once per append of every other aggregate, and a second later at the latest.
    if (relevant.length === 0 && Date.now() - (this.persistedAt.get(p.name) ?? 0) < 1000) {
      this.positions.set(p.name, last);
      this.notify();
      // Events of its types that change nothing (`writes`) are still ones a write in another
      // process waits for, reading this checkpoint: written now (one statement, which no waiter
      // here waits for), or that process would wait up to a second for each such write.
      if (handled.length > 0) this.persistNow(p, term, last);
      else this.persistLater(p, term);
      return;
    }
    this.persistedAt.set(p.name, Date.now());
    const applied =
      relevant.length === 0
        ? await this.moveCheckpoint(this.db, p, from, last)
        : await this.applyRelevant(p, from, last, relevant);
    if (term !== this.term) return;
    if (!applied) {
      const { rows } = await this.pool.query('SELECT position FROM projection_checkpoints WHERE name = $1', [p.name]);
      if (!rows[0]) throw new Error(`projection ${p.name} has no checkpoint`);
      this.positions.set(p.name, Math.max(from, Number(rows[0].position)));
      return this.applyBatch(p, term, batch, upTo);
    }
    this.positions.set(p.name, last);
    this.notify();
    if (p.kind === 'reactor' && relevant.length > 0) this.onReactorWrote(p.tables);
  }

  /**
   * Writes the checkpoint of a follower that skipped writing it, a second after its last write. A
   * process that does not lead reads the checkpoints to wait for its writes: without this, a
   * checkpoint left behind by a skipped batch stayed there until the next append, and in a quiet
   * log that process waited out its deadline (a provider import stepped by another server never
   * went on). `position < $2` fences it as the batches are: a checkpoint another leader moved on
   * stays.
   */
  private persistLater(p: Follower, term: number): void {
    if (this.trailing.has(p.name)) return;
    const due = (this.persistedAt.get(p.name) ?? 0) + 1000 - Date.now();
    const timer = setTimeout(async () => {
      this.trailing.delete(p.name);
      if (term !== this.term || this.stopped) return;
      this.persistedAt.set(p.name, Date.now());
      this.owe(p.name, this.positions.get(p.name) ?? 0);
    }, due);
    timer.unref();
    this.trailing.set(p.name, timer);
  }

  /** Writes a checkpoint that skipped a batch now, in the background; fenced as `persistLater` is. */
  private persistNow(p: Follower, term: number, position: number): void {
    if (term !== this.term || this.stopped) return;
    this.persistedAt.set(p.name, Date.now());
    this.owe(p.name, position);
  }

  /** Checkpoints owed by `persistNow` and `persistLater`, by follower, not yet handed to a write. */
  private readonly owed = new Map<string, number>();
  /** The write of owed checkpoints under way, which no batch waits for; `stop` waits for it. */
  private owing: Promise<void> | null = null;

  /**
   * Writes an owed checkpoint: at once when no such write is under way, else with every other
   * one owed meanwhile, in the next write. A batch of arriving mail is skipped by several
   * followers (files, the reactors that found nothing to do), each of which wrote its own.
   */
  private owe(name: string, position: number): void {
    this.owed.set(name, Math.max(position, this.owed.get(name) ?? 0));
    this.owing ??= (async () => {
      while (this.owed.size > 0) {
        const names = [...this.owed.keys()];
        const positions = [...this.owed.values()];
        this.owed.clear();
        try {
          await this.pool.query({ ...ADVANCE_CHECKPOINTS, values: [names, positions] });
        } catch (error) {
          this.report('projection checkpoints', error);
        }
      }
      this.owing = null;
    })();
  }

  /**
   * Moves a checkpoint from where this process left it (never further than `from`: batches it
   * ignored are not always written): a checkpoint further on means another process projected
   * these events, and nothing moves. Read models are derived: a crash may lose the last few ms of
   * this work, and the checkpoint committed with it replays exactly that, so the transaction skips
   * the WAL flush (set in the same statement, a round trip less). Alone, outside a transaction, it
   * is the whole write of a batch the follower ignores: one round trip, where a transaction of it
   * took three, once a second for every follower while any other slice appends.
   */
  private async moveCheckpoint(db: Kysely<unknown>, p: Follower, from: number, last: number): Promise<boolean> {
    const moved = await sql`UPDATE projection_checkpoints SET position = ${last}, updated_at = now()
      WHERE name = ${p.name} AND position <= ${from} AND (SELECT set_config('synchronous_commit', 'off', true)) IS NOT NULL`.execute(
      db,
    );
    return moved.numAffectedRows !== 0n;
  }

  private async applyRelevant(p: Follower, from: number, last: number, relevant: ProjectedEvent[]): Promise<boolean> {
    const recorder = this.recorders.get(p.name);
    if (recorder && this.writeTransactions)
      return this.applyPipelined(p, recorder, this.writeTransactions, from, last, relevant);
    return this.db.transaction().execute(async (trx) => {
      // The checkpoint row is locked first, so an operator's swap (which locks it too) never
      // deadlocks against table locks taken by this batch.
      if (!(await this.moveCheckpoint(trx, p, from, last))) return false;
      await p.applyBatch(trx, relevant);
      return true;
    });
  }

  /**
   * A batch as one transaction sent whole: the checkpoint's move first (failing the transaction if
   * another process moved it), then what the projector's `applyBatch` wrote, recorded rather than run.
   */
  private async applyPipelined(
    p: Follower,
    recorder: Recording,
    transactions: WriteTransactions,
    from: number,
    last: number,
    relevant: ProjectedEvent[],
  ): Promise<boolean> {
    // Whatever a batch that threw left recorded is not this one's.
    recorder.take();
    await p.applyBatch(recorder.db, relevant);
    try {
      await transactions.run([
        { text: 'SELECT projection_checkpoint_move($1, $2, $3)', values: [p.name, from, last] },
        ...recorder.take(),
      ]);
      return true;
    } catch (error) {
      if ((error as { code?: string }).code === CHECKPOINT_MOVED) return false;
      throw error;
    }
  }

  decode(e: RecordedEvent): ProjectedEvent {
    const { type, data } = this.registry.decode(e.type, e.version, e.data);
    // Every event is appended by commands/execute.ts, which writes the workspace into its metadata.
    const metadata = e.metadata as EventMetadata;
    return {
      type,
      data,
      streamId: e.streamId,
      revision: e.revision,
      position: e.position,
      recordedAt: e.recordedAt,
      metadata,
    };
  }

  /** Writes waiting for read models (`waitFor`): how to wake each, and whether it is ready to go on. */
  private readonly waiters = new Map<() => void, () => boolean>();

  /**
   * Wakes the waiters whose read models have all passed their position. Each follower's batch
   * says so, skipped or applied (about 11,000 times a second under 64 writers), and waking every
   * waiter each time to look and sleep again cost a promise and a timer per waiter per batch
   * (24,000 a second): the check is made here, and only a waiter that can go on wakes.
   */
  private notify(): void {
    for (const [wake, ready] of this.waiters) if (ready()) wake();
  }

  /** Wakes every waiter to look again: the lead was lost, or the runner stops. */
  private wakeAll(): void {
    for (const wake of [...this.waiters.keys()]) wake();
  }

  /**
   * Resolves once every follower that handles one of `eventTypes` has passed `position`. Past the
   * deadline it rejects, unless `wait.onDeadline` asks to wait on. Rejects when the runner stops.
   */
  async waitFor(position: number, eventTypes: readonly string[], wait: ReadModelWait = {}): Promise<void> {
    const concerned = this.followers.filter((p) => eventTypes.some((t) => this.awaited.get(p.name)!.has(t)));
    if (concerned.length === 0) return;
    // Another process's checkpoints are read from the database on the waiter's own timer.
    const ready = () =>
      this.leaderClient !== null && concerned.every((p) => (this.positions.get(p.name) ?? 0) >= position);
    let deadline = Date.now() + this.deadlineMs;
    for (;;) {
      if (this.stopped) throw new Error('the projections stopped');
      if (this.leaderClient ? ready() : await this.passedInDatabase(concerned, position)) return;
      if (Date.now() >= deadline) {
        if (!wait.onDeadline?.())
          throw new Error(`read models did not reach position ${position} within ${this.deadlineMs} ms`);
        deadline = Infinity;
      }
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.waiters.delete(done);
          resolve();
        };
        const timer = setTimeout(done, Math.min(this.leaderClient ? 100 : 10, Math.max(0, deadline - Date.now())));
        this.waiters.set(done, ready);
      });
    }
  }

  /** Whether the checkpoints say every one of them has passed `position`; not while the database does not answer. */
  private async passedInDatabase(concerned: Follower[], position: number): Promise<boolean> {
    try {
      const { rows } = await this.pool.query(
        'SELECT count(*)::int AS n FROM projection_checkpoints WHERE name = ANY($1) AND position >= $2',
        [concerned.map((p) => p.name), position],
      );
      return rows[0].n === concerned.length;
    } catch {
      return false;
    }
  }

  /** Every follower's standing, read from the database, so any process (the CLI) sees the leader's. */
  async status(): Promise<ProjectionStatus[]> {
    const head = await this.store.headPosition();
    const { rows } = await this.pool.query(
      `SELECT c.name, c.position, h.worker, h.beat_at, h.beat_at > now() - make_interval(secs => $1) AS fresh
         FROM projection_checkpoints c LEFT JOIN projection_heartbeats h USING (name)`,
      [HEARTBEAT_FRESH_SECONDS],
    );
    const byName = new Map(rows.map((r) => [r.name as string, r]));
    return Promise.all(
      this.followers.map(async (f): Promise<ProjectionStatus> => {
        const row = byName.get(f.name);
        const checkpoint = Number(row?.position ?? 0);
        const position = this.leads ? Math.max(checkpoint, this.positions.get(f.name) ?? 0) : checkpoint;
        return {
          name: f.name,
          kind: f.kind,
          version: f.version,
          position,
          head,
          lag: await countHandled(this.store, f.handles, position, head),
          behind: Math.max(0, head - position),
          running: row?.fresh === true,
          worker: row?.worker ?? null,
          heartbeatAt: row?.beat_at ? new Date(row.beat_at).toISOString() : null,
        };
      }),
    );
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.stopBeating();
    for (const timer of this.trailing.values()) clearTimeout(timer);
    this.trailing.clear();
    if (this.leaderRetry) clearTimeout(this.leaderRetry);
    this.wakeAll();
    await this.leading;
    await this.bulkCatchUps;
    await this.unsubscribing;
    await Promise.all(this.subscriptions.splice(0).map((s) => s.close()));
    await this.owing;
    const client = this.leaderClient;
    if (!client) return;
    this.leaderClient = null;
    this.term++;
    try {
      await this.pool.query({
        ...ADVANCE_CHECKPOINTS,
        values: [[...this.positions.keys()], [...this.positions.values()]],
      });
      // Before the lock goes: no other leader can have beaten in the meantime.
      await this.pool.query('DELETE FROM projection_heartbeats WHERE worker = $1', [this.worker]);
      await client.query('SELECT pg_advisory_unlock($1)', [LEADER_LOCK]);
      client.release();
    } catch (error) {
      // The database went away first: the checkpoints written stand, and the lock ended with the session.
      client.release(error as Error);
    }
  }
}

/**
 * How many events of `types` lie in (after, until]: counted by the store where it can (a count in
 * PostgreSQL), else read page by page.
 */
async function countHandled(
  store: EventStore,
  types: readonly string[],
  after: number,
  until: number,
): Promise<number> {
  if (after >= until) return 0;
  if (store.countAll) return store.countAll({ after, until, types });
  let count = 0;
  for (let position = after; position < until; ) {
    const events = await store.readAll({ after: position, limit: 1000 });
    if (events.length === 0) break;
    for (const e of events) if (e.position <= until && types.includes(e.type)) count++;
    position = events[events.length - 1]!.position;
  }
  return count;
}

const indexesOf = (f: Follower) => (f.kind === 'projector' ? f.indexes?.('public') : undefined);
