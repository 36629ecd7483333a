import type pg from 'pg';
import {
  beginProviderImport,
  finishProviderImport,
  type ProviderImportPorts,
  recordProviderImportProgress,
} from '../../commands/provider-imports/handlers.ts';
import { type Actor, type CommandContext, deferredWrites } from '../../commands/execute.ts';
import type { ReceiverUrlCheck } from '../../commands/webhooks/handlers.ts';
import { providerImportSecretId } from '../../domain/provider-imports/events.ts';
import {
  withError,
  type ImportReport,
  type ImportResource,
  type ProviderName,
} from '../../domain/provider-imports/providers.ts';
import type { Delivery as Job, JobOutcome, WorkQueue } from '../../infra/bus/port.ts';
import { ProviderError, type SourcePage } from '../../infra/providers/port.ts';
import { type DueWork, type RunStep, runStepWork, type DueWakeups } from '../due-work.ts';
import { applyPage, recordMarks, type PageMarks } from './fill.ts';
import { gather, goesOn, PagesAhead } from './gather.ts';

export interface ProviderImportOptions {
  /** The bus queue of run steps; one per database (jobs name rows of it). */
  queue: string;
  pollMs: number;
  /** A step enqueued this long ago without an outcome is enqueued again (its process died). */
  staleAfterMs: number;
  /** Imports stepped at once by this process. */
  concurrency: number;
  /** The first wait after a 5xx or no answer, doubled each time; also the wait after a 429 without Retry-After. */
  retryBaseMs: number;
  /** The longest of those doubled waits (a provider's own Retry-After is taken as given). */
  retryMaxMs: number;
  /** Failed attempts at one page before its resource is given up (a report error) and the next begins. */
  attemptsMax: number;
  /**
   * Rows a step writes at least, its pages allowing: pages read one after another until they hold
   * this many are written and checkpointed together, so small pages (Brevo's 100 blocked
   * addresses) pay for one checkpoint, one claim and one append call among them. 1,000 rather
   * than 500: a step's round trips, each waiting for a core on a busy machine, are what a row
   * paid beside its own CPU (the import at 100,000 rows: +15–50% alternating, docs/benchmarks.md).
   */
  rowsPerStep: number;
  /**
   * Steps whose pages are read ahead of the one written (gather.ts `PagesAhead`): enough that the
   * provider's rate limit, not a 429's whole-second wait after a burst, paces an import whose
   * writes keep up (Brevo: 10 pages of 1,000 contacts a second), at a few megabytes a run.
   */
  stepsAhead: number;
}

export const DEFAULT_PROVIDER_IMPORT_OPTIONS: ProviderImportOptions = {
  queue: 'provider-import-runs',
  pollMs: 250,
  staleAfterMs: 300_000,
  concurrency: 2,
  retryBaseMs: 1000,
  retryMaxMs: 60_000,
  attemptsMax: 5,
  rowsPerStep: 1000,
  stepsAhead: 10,
};

/** The longest `Retry-After` taken as given: past it, the provider is asked again anyway. */
const RETRY_AFTER_MAX_MS = 3_600_000;

interface Run {
  id: string;
  workspace_id: string;
  provider: ProviderName;
  resources: ImportResource[];
  status: 'queued' | 'running' | 'done';
  stage: number;
  cursor: string | null;
  report: ImportReport;
  attempts: number;
  seq: number;
}

/**
 * The process manager of provider imports. A run (schedule.ts) is due at once; a job takes a
 * step of it from where the row stands and moves `seq` on, so a duplicate job is a no-op (a
 * redelivered one takes over a run its dead holder left on the bus). While
 * the next step is due at once, the job takes that one too (for up to INLINE_MS; the row stays
 * marked as on the bus meanwhile), so no poll of the dispatcher sits between two pages:
 *  - the first appends `ProviderImportStarted` (a cancel appended first wins: nothing is read);
 *  - each later step reads the next page of the resource under way with the key from the vault
 *    (pages, while they hold fewer than `rowsPerStep` rows: gather.ts), applies it through the
 *    resources' commands (fill.ts), and in one statement stores the cursor of the page after it
 *    with the report: the checkpoint. A crash repeats at most that step,
 *    which the source map (`provider_import_sources`) and the commands' natural keys make
 *    harmless;
 *  - so that the provider's paging, not our writes, sets the pace, a step overlaps the two: while
 *    it writes its page it already reads the next ones (`stepsAhead` steps, kept in memory for
 *    the next steps, which read them again if another process takes the run or this one died;
 *    a few short 429s of one are waited out there), and it waits for the read models to hold the
 *    page before its own, not its own; the last page of a resource is waited for before the
 *    resource counts as done;
 *  - a 429 puts the step after `Retry-After` without moving the cursor; a 5xx or no answer is
 *    tried again `attemptsMax` times with backoff, then the resource is a report error;
 *  - a key refused midway, or gone from the vault, fails the import; after the last resource the
 *    import completes. Either way the key is erased.
 */
export class ProviderImportProcess {
  private readonly work: DueWork<RunStep>;
  /** Per run stepped here: the next steps' pages read ahead, and the read-model wait of the page written last. */
  private readonly ahead = new Map<string, Ahead>();
  /** Runs a job is stepping, and until when it takes their next steps itself. */
  private readonly inlineUntil = new Map<string, number>();

  constructor(
    private readonly deps: {
      pool: pg.Pool;
      bus: WorkQueue;
      wakeups: DueWakeups;
      commands: CommandContext;
      ports: ProviderImportPorts;
      checkUrl: ReceiverUrlCheck;
    },
    private readonly options: ProviderImportOptions = DEFAULT_PROVIDER_IMPORT_OPTIONS,
  ) {
    this.work = runStepWork(deps, options, 'provider import', 'provider_import_runs', "status <> 'done'");
  }

  async start(): Promise<void> {
    await this.work.start((job) => this.handle(job), {
      concurrency: this.options.concurrency,
      retryOnErrorMs: 1000,
      onError: (error) => console.error('provider import:', error),
    });
  }

  async stop(): Promise<void> {
    await this.work.stop();
    // Pages read ahead go on being asked for until stopped: nothing is asked of a provider after this.
    for (const id of [...this.ahead.keys()]) this.forget(id);
  }

  /** Forgets what was kept for a run here, its reader stopped: nothing more is asked for it. */
  private forget(runId: string): void {
    this.ahead.get(runId)?.reader?.stop();
    this.ahead.delete(runId);
  }

  private async handle(job: Job): Promise<JobOutcome> {
    const { id, seq } = job.payload as { id: string; seq: number };
    // A job is redelivered only when its holder died or threw (the bus hears from a live one), and
    // a holder that stepped inline has moved `seq` past the job's while the row stayed marked as
    // on the bus: without taking the row over, the run would wait for the stale re-enqueue.
    const { rows } = await this.deps.pool.query<Run>(
      `SELECT * FROM provider_import_runs WHERE id = $1 AND status <> 'done' AND due_at <= now()
         AND (seq = $2 OR ($3 AND seq > $2 AND enqueued_at IS NOT NULL))`,
      [id, seq, job.attempt > 1],
    );
    let run: Run | null = rows[0] ?? null;
    if (!run) return { ack: true };
    // A poll of the dispatcher between pages would pace the import; the job goes on with the
    // run's next step while it is due at once, for a while, then hands it back (other runs wait).
    this.inlineUntil.set(run.id, Date.now() + INLINE_MS);
    try {
      while (run) {
        // What was kept for another step of the run (pages read ahead, a wait) is of no use to this one.
        if (this.ahead.get(run.id)?.seq !== run.seq) this.forget(run.id);
        const actor: Actor = { workspaceId: run.workspace_id, kind: 'system', id: run.id };
        run = run.status === 'queued' ? await this.begin(run, actor) : await this.step(run, actor);
      }
    } finally {
      this.inlineUntil.delete(id);
    }
    return { ack: true };
  }

  /**
   * The run's next step, due after `delayMs`: the checkpoint. Only from the step read (`seq`), never
   * after a cancel. A step due at once within the job's time (`inlineUntil`) stays marked as on
   * the bus and is answered, for this job to take next; any other is left to the dispatcher.
   */
  private async advance(
    run: Run,
    next: {
      status: Run['status'];
      stage?: number;
      cursor?: string | null;
      report?: ImportReport;
      attempts?: number;
      /** What the page did to the source map: recorded in the same transaction as the report that counts it. */
      marks?: PageMarks | null;
    },
    delayMs = 0,
  ): Promise<Run | null> {
    const until = this.inlineUntil.get(run.id);
    const inline = delayMs === 0 && next.status !== 'done' && until !== undefined && Date.now() < until;
    // One statement, so one round trip and its own transaction: the run's row moved on, and with
    // it what the step did to the source map. Its commit does not wait for the WAL flush: a
    // checkpoint lost in a crash of PostgreSQL repeats its step, as a crash of this process before
    // the checkpoint does (the step's appends, committed before it, are flushed; so is this
    // commit by the next step's).
    const { rows } = await recordMarks(
      this.deps.pool,
      { workspaceId: run.workspace_id, provider: run.provider, importId: run.id },
      next.marks ?? null,
      {
        sql: `UPDATE provider_import_runs SET seq = seq + 1, enqueued_at = CASE WHEN $9 THEN now() END, status = $3, stage = $4,
           cursor = $5, report = $6::jsonb, attempts = $7, due_at = now() + make_interval(secs => $8::double precision / 1000)
         WHERE id = $1 AND seq = $2 AND status <> 'done' AND (SELECT set_config('synchronous_commit', 'off', true)) IS NOT NULL
         RETURNING *`,
        params: [
          run.id,
          run.seq,
          next.status,
          next.stage ?? run.stage,
          next.cursor === undefined ? run.cursor : next.cursor,
          JSON.stringify(next.report ?? run.report),
          next.attempts ?? 0,
          delayMs,
          inline,
        ],
      },
    );
    return inline ? ((rows[0] as Run | undefined) ?? null) : null;
  }

  private async begin(run: Run, actor: Actor): Promise<Run | null> {
    const status = await beginProviderImport(this.deps.commands, actor, run.id, new Date().toISOString());
    if (status === 'running') return this.advance(run, { status: 'running' });
    // Cancelled (or settled) before it started: nothing to read, and no key to keep.
    await this.deps.ports.secrets.delete(providerImportSecretId(run.id));
    return this.advance(run, { status: 'done' });
  }

  private async finish(run: Run, actor: Actor, report: ImportReport, error: string | null): Promise<Run | null> {
    await finishProviderImport(
      this.deps.commands,
      this.deps.ports,
      actor,
      run.id,
      { report, error },
      new Date().toISOString(),
    );
    return this.advance(run, { status: 'done', report });
  }

  private async step(run: Run, actor: Actor): Promise<Run | null> {
    const resource = run.resources[run.stage];
    if (resource === undefined) return this.finish(run, actor, run.report, null);
    const apiKey = await this.deps.ports.secrets.get(providerImportSecretId(run.id));
    if (apiKey === undefined)
      return this.finish(run, actor, run.report, 'The provider key is no longer held; start the import again.');
    const source = this.deps.ports.connect(run.provider, apiKey);
    if (!source.offers.includes(resource)) return this.nextResource(run, actor, run.report);

    const ahead = this.ahead.get(run.id);
    this.ahead.delete(run.id);
    let reader = ahead?.reader && ahead.stage === run.stage && ahead.cursor === run.cursor ? ahead.reader : null;
    if (!reader) ahead?.reader?.stop();
    let page: SourcePage;
    let taken: SourcePage | null = null;
    try {
      taken = (await reader?.take()) ?? null;
      page = taken ?? (await gather(source, resource, run.cursor, this.options.rowsPerStep));
    } catch (error) {
      reader?.stop();
      if (!(error instanceof ProviderError)) throw error;
      await ahead?.settled;
      return this.refused(run, actor, resource, error);
    }
    // The next pages are asked for while this one is written; a refusal of one is its step's.
    if (!taken) {
      reader?.stop();
      reader = goesOn(page)
        ? new PagesAhead(source, resource, page.next!, this.options.rowsPerStep, this.options.stepsAhead)
        : null;
    }
    const writes = deferredWrites(this.deps.commands);
    const { report, marks } = await applyPage(
      {
        commands: writes.commands,
        pool: this.deps.pool,
        checkUrl: this.deps.checkUrl,
        actor,
        importId: run.id,
        provider: run.provider,
      },
      page.items,
      run.report,
    );
    // Once per page, not per row, and a page behind: the page before this one reaches the read
    // models while this one is written, so the import never runs more than a page ahead of them.
    await ahead?.settled;
    const settled = writes.settled();
    if (page.next === null) {
      reader?.stop();
      // The resource counts as done once all its rows are readable.
      await settled;
      return this.nextResource(run, actor, report, marks);
    }
    settled.catch(() => {});
    const moved = await this.advance(run, { status: 'running', cursor: page.next, report, marks }, page.waitMs ?? 0);
    this.ahead.set(run.id, { seq: run.seq + 1, stage: run.stage, cursor: page.next, reader, settled });
    // Runs whose next step went to another process (or was cancelled) leave theirs: the oldest go.
    for (const id of this.ahead.keys()) {
      if (this.ahead.size <= this.options.concurrency + AHEAD_SPARE) break;
      this.forget(id);
    }
    return moved;
  }

  private async nextResource(
    run: Run,
    actor: Actor,
    report: ImportReport,
    marks?: PageMarks | null,
  ): Promise<Run | null> {
    await recordProviderImportProgress(this.deps.commands, actor, run.id, report, new Date().toISOString());
    return this.advance(run, { status: 'running', stage: run.stage + 1, cursor: null, report, marks });
  }

  /** What a provider's refusal of a page means for the run. */
  private async refused(run: Run, actor: Actor, resource: ImportResource, error: ProviderError): Promise<Run | null> {
    const { retryBaseMs, retryMaxMs, attemptsMax } = this.options;
    const backoff = Math.min(retryMaxMs, retryBaseMs * 2 ** run.attempts);
    switch (error.kind) {
      case 'rate_limited':
        // The provider's own wait when it gave one, however long (within an hour); a 429 is no
        // failure, so it never gives up the resource.
        return this.advance(
          run,
          { status: 'running', attempts: run.attempts + 1 },
          error.retryAfterMs === null ? backoff : Math.min(RETRY_AFTER_MAX_MS, error.retryAfterMs),
        );
      case 'unavailable':
        if (run.attempts + 1 < attemptsMax)
          return this.advance(run, { status: 'running', attempts: run.attempts + 1 }, backoff);
        return this.nextResource(
          run,
          actor,
          withError(run.report, { resource, sourceId: null, code: 'provider_unavailable', message: error.message }),
        );
      case 'failed':
        return this.nextResource(
          run,
          actor,
          withError(run.report, { resource, sourceId: null, code: 'provider_failed', message: error.message }),
        );
      case 'restricted':
      case 'refused':
        return this.finish(run, actor, run.report, error.message);
    }
  }
}

/** How long one job goes on with its run's steps before it leaves the next to the dispatcher. */
const INLINE_MS = 30_000;

/**
 * Runs whose read-ahead one process keeps beyond those it steps at once: each holds up to
 * `stepsAhead` steps of pages (about 10,000 rows, a few megabytes), so only a couple more than
 * are stepped, for runs handed back to the dispatcher for a wait.
 */
const AHEAD_SPARE = 2;

/** What a step leaves for the next step of its run, in this process (`seq` names that step). */
interface Ahead {
  seq: number;
  stage: number;
  cursor: string;
  /** The pages of the steps after it, read ahead from `cursor`. */
  reader: PagesAhead | null;
  settled: Promise<void>;
}
