import type pg from 'pg';
import type { Consumer, ConsumeOptions, Job, JobHandler, WorkQueue } from '../infra/bus/port.ts';
import { Repeating } from './repeating.ts';

/** The most rows one claim takes; a full claim is followed at once by the next. */
const CLAIM_BATCH = 500;

/**
 * Where due work lives: rows of `table`, keyed by `key`, with an `enqueued_at` column that marks a
 * row as on the bus. `due` says which rows are due, `order` which go first; `set` adds to the mark
 * (counting the attempt, say); `returning` is what becomes the job. Fragments of our own SQL, never input.
 */
export interface DueRows {
  table: string;
  key: string;
  due: string;
  order: string;
  set?: string;
  returning: string;
}

/**
 * Work whose due time lives in the database, carried on the bus: a loop claims due rows that are
 * not on the bus (or were put there more than `staleAfterMs` ago: lost by the bus, or their worker
 * died), marks them, and publishes one job each; consumers run the handler. On start everything
 * due is claimed whatever its mark, so a restart or a lost job loses no work. SKIP LOCKED lets
 * several processes share the work. Used by webhook delivery, switch-off notices and automation runs.
 */
export class DueWork<R> {
  private consumer: Consumer | null = null;
  private readonly loop: Repeating;
  private everything = true;

  constructor(
    private readonly deps: { pool: pg.Pool; bus: WorkQueue },
    private readonly queue: string,
    private readonly options: { pollMs: number; staleAfterMs: number; label: string },
    private readonly rows: DueRows,
    private readonly toJob: (row: R) => Job,
  ) {
    this.loop = new Repeating(`${options.label} dispatcher`, () => this.dispatch(), options.pollMs);
  }

  async start(handler: JobHandler, consume: ConsumeOptions): Promise<void> {
    this.consumer = await this.deps.bus.consume(this.queue, handler, consume);
    this.loop.start();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
    await this.consumer?.close();
  }

  /** One claim and its publishes; answers when to claim next. */
  private async dispatch(): Promise<number> {
    const jobs = (await this.claim(this.everything)).map(this.toJob);
    this.everything = false;
    // Publishes wait for the stream's acknowledgement; one after another they added a round trip per job.
    await Promise.all(jobs.map((job) => this.deps.bus.publish(this.queue, job)));
    return jobs.length >= CLAIM_BATCH ? 0 : this.options.pollMs;
  }

  private async claim(everything: boolean): Promise<R[]> {
    const { table, key, due, order, set, returning } = this.rows;
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
 * `id`, due by `due_at`, each step a job named by id and `seq`, so a step repeated by the bus is
 * known for the stale one it is.
 */
export function runStepWork(
  deps: { pool: pg.Pool; bus: WorkQueue },
  options: { queue: string; pollMs: number; staleAfterMs: number },
  label: string,
  table: string,
  due: string,
): DueWork<RunStep> {
  return new DueWork<RunStep>(
    deps,
    options.queue,
    { pollMs: options.pollMs, staleAfterMs: options.staleAfterMs, label },
    { table, key: 'id', due, order: 'due_at', returning: 'r.id, r.seq' },
    (r) => ({ id: `${r.id}.${r.seq}`, payload: { id: r.id, seq: r.seq } }),
  );
}
