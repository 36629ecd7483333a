import type pg from 'pg';
import type { Consumer, ConsumeOptions, Job, JobHandler, WorkQueue } from '../infra/bus/port.ts';
import { Repeating } from './repeating.ts';

/** The most rows one claim takes; a full claim is followed at once by the next. */
const CLAIM_BATCH = 500;

/**
 * The longest a dispatcher sleeps (unless its `pollMs` is longer) when nothing it knows of falls
 * due sooner: it finds rows another process wrote, and jobs gone stale, within this.
 */
const DEFAULT_IDLE_MS = 1000;

/**
 * Where due work lives: rows of `table`, keyed by `key`, with an `enqueued_at` column that marks a
 * row as on the bus. A row that `waiting` picks is due once its `when` (an SQL expression of the
 * row) has come, or at once when there is no `when`; `order` says which go first; `set` adds to
 * the mark (counting the attempt, say); `returning` is what becomes the job. Fragments of our own
 * SQL, never input.
 */
export interface DueRows {
  table: string;
  key: string;
  waiting: string;
  when?: string;
  order: string;
  set?: string;
  returning: string;
}

/**
 * Who wakes the dispatchers of one system: a writer of a due table (a reactor's batch, an insert
 * of our own) says which tables it wrote, and their dispatchers look at once instead of at their
 * next poll. One per system, built in `openSystem`.
 */
export class DueWakeups {
  private readonly byTable = new Map<string, Set<{ wake(): void }>>();

  add(table: string, work: { wake(): void }): () => void {
    const works = this.byTable.get(table) ?? new Set();
    this.byTable.set(table, works);
    works.add(work);
    return () => works.delete(work);
  }

  wake(tables: readonly string[]): void {
    for (const table of tables) for (const work of this.byTable.get(table) ?? []) work.wake();
  }
}

/**
 * Work whose due time lives in the database, carried on the bus: a loop claims due rows that are
 * not on the bus (or were put there more than `staleAfterMs` ago: lost by the bus, or their worker
 * died), marks them, and publishes one job each; consumers run the handler. On start everything
 * due is claimed whatever its mark, so a restart or a lost job loses no work. SKIP LOCKED lets
 * several processes share the work.
 *
 * The loop looks when woken (a write to its table, a handler finished), when the earliest waiting
 * row falls due, and at the latest after `idleMs`; never twice within `pollMs`. An idle service
 * asked PostgreSQL a hundred times a second when every dispatcher looked every `pollMs`.
 */
export class DueWork<R> {
  private consumer: Consumer | null = null;
  private readonly loop: Repeating;
  private everything = true;
  private claimedAt = 0;
  private leave: () => void = () => {};

  constructor(
    private readonly deps: { pool: pg.Pool; bus: WorkQueue; wakeups: DueWakeups },
    private readonly queue: string,
    private readonly options: { pollMs: number; staleAfterMs: number; label: string; idleMs?: number },
    private readonly rows: DueRows,
    private readonly toJob: (row: R) => Job,
  ) {
    this.loop = new Repeating(`${options.label} dispatcher`, () => this.dispatch(), options.pollMs);
  }

  async start(handler: JobHandler, consume: ConsumeOptions): Promise<void> {
    // A handler may write its row again (a retry at a later time): the loop learns when.
    const handled: JobHandler = async (job) => {
      try {
        return await handler(job);
      } finally {
        this.wake();
      }
    };
    this.consumer = await this.deps.bus.consume(this.queue, handled, consume);
    this.leave = this.deps.wakeups.add(this.rows.table, this);
    this.loop.start();
  }

  async stop(): Promise<void> {
    this.leave();
    await this.loop.stop();
    await this.consumer?.close();
  }

  /** Rows of the table were written: look now, or once `pollMs` has passed since the last look. */
  wake(): void {
    this.loop.wake(Math.max(0, this.claimedAt + this.options.pollMs - Date.now()));
  }

  /** One claim and its publishes; answers when to claim next. */
  private async dispatch(): Promise<number> {
    this.claimedAt = Date.now();
    const jobs = (await this.claim(this.everything)).map(this.toJob);
    this.everything = false;
    // Publishes wait for the stream's acknowledgement; one after another they added a round trip per job.
    await Promise.all(jobs.map((job) => this.deps.bus.publish(this.queue, job)));
    if (jobs.length >= CLAIM_BATCH) return 0;
    const idle = Math.max(this.options.pollMs, this.options.idleMs ?? DEFAULT_IDLE_MS);
    const next = await this.untilNextDue();
    return next === null ? idle : Math.min(idle, Math.max(this.options.pollMs, next));
  }

  /** Milliseconds until the earliest waiting row falls due, or null when none waits on a time. */
  private async untilNextDue(): Promise<number | null> {
    const { table, waiting, when } = this.rows;
    if (!when) return null;
    // Bounded to [now, a day on]: a `when` of ±infinity (a domain never checked) cannot be
    // subtracted from a time.
    const { rows } = await this.deps.pool.query<{ ms: number | null }>(
      `SELECT (extract(epoch FROM least(greatest(m, now()), now() + interval '1 day') - now()) * 1000)::float8 AS ms
       FROM (SELECT min(${when}) AS m FROM ${table} WHERE enqueued_at IS NULL AND (${waiting})) earliest
       WHERE m IS NOT NULL`,
    );
    return rows[0]?.ms ?? null;
  }

  private async claim(everything: boolean): Promise<R[]> {
    const { table, key, waiting, when, order, set, returning } = this.rows;
    const due = when ? `(${waiting}) AND ${when} <= now()` : waiting;
    const { rows } = await this.deps.pool.query<R & pg.QueryResultRow>(
      `UPDATE ${table} r SET enqueued_at = now()${set ? `, ${set}` : ''}
       FROM (SELECT ${key} FROM ${table}
             WHERE (${due})
               AND ($1 OR enqueued_at IS NULL OR enqueued_at < now() - make_interval(secs => $2::double precision / 1000))
             ORDER BY ${order} LIMIT ${CLAIM_BATCH} FOR UPDATE SKIP LOCKED) due
       WHERE r.${key} = due.${key} RETURNING ${returning}`,
      [everything, this.options.staleAfterMs],
    );
    return rows;
  }
}

/** A step of a run: the run's id and the `seq` its row had when the step was put on the bus. */
export type RunStep = { id: string; seq: number };

/**
 * The DueWork of a run table (broadcasts, provider and mailbox imports, exports): rows keyed by
 * `id`, due by `due_at` while `running` holds, each step a job named by id and `seq`, so a step
 * repeated by the bus is known for the stale one it is.
 */
export function runStepWork(
  deps: { pool: pg.Pool; bus: WorkQueue; wakeups: DueWakeups },
  options: { queue: string; pollMs: number; staleAfterMs: number },
  label: string,
  table: string,
  running: string,
): DueWork<RunStep> {
  return new DueWork<RunStep>(
    deps,
    options.queue,
    { pollMs: options.pollMs, staleAfterMs: options.staleAfterMs, label },
    {
      table,
      key: 'id',
      waiting: running,
      when: 'due_at',
      order: 'due_at',
      returning: 'r.id, r.seq',
    },
    (r) => ({ id: `${r.id}.${r.seq}`, payload: { id: r.id, seq: r.seq } }),
  );
}
