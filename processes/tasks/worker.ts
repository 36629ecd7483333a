import type pg from 'pg';
import type { CommandContext } from '../../commands/execute.ts';
import { queueTaskRun } from '../../commands/tasks/handlers.ts';
import { DomainError } from '../../domain/shared/errors.ts';
import { digestId } from '../../domain/shared/ids.ts';
import type { RunSettings, Trigger } from '../../domain/tasks/events.ts';
import { nextScheduledRun } from '../../domain/tasks/schedule.ts';
import type { Delivery as Job, JobOutcome, WorkQueue } from '../../infra/bus/port.ts';
import { type DueWakeups, DueWork } from '../due-work.ts';

export interface TaskSchedulerOptions {
  /** The bus queue of due schedules; one per database (jobs name rows of it). */
  queue: string;
  pollMs: number;
  /** A job enqueued this long ago without an outcome is enqueued again. */
  staleAfterMs: number;
  concurrency: number;
}

export const DEFAULT_TASK_SCHEDULER_OPTIONS: TaskSchedulerOptions = {
  queue: 'task-schedule',
  pollMs: 250,
  staleAfterMs: 60_000,
  concurrency: 8,
};

/** What one due schedule came to. */
export type TickOutcome = 'queued' | 'repeated' | 'held' | 'skipped' | 'stale';

interface Row {
  task_id: string;
  workspace_id: string;
  trigger: Trigger;
  settings: RunSettings;
  max_runs_per_day: number;
  next_run_at: Date;
}

/**
 * The timer half of tasks. Each active schedule's next instant lives in `task_schedules` (made by
 * schedule.ts); DueWork claims the rows whose instant has come and puts one job each on the bus. A
 * job queues the run of that slot (`TaskRunQueued`, counted against `maxRunsPerDay` of the slot's
 * UTC day; past it the slot is held, not queued) and moves the row to the schedule's next instant
 * after the slot and after now: a service down for hours runs the missed slot once, not each.
 * The run's id is a digest of task and slot and the day's stream knows its run ids, so a job
 * repeated after a crash queues nothing twice. Without an AI model no run is queued (it could not
 * run): slots pass as `skipped`. Runs arriving mail started (`task_mail_runs`, schedule.ts) are
 * queued by a second DueWork the same way, under ids digested from task and message.
 */
export class TaskScheduler {
  private readonly work: DueWork<{ task_id: string; seq: number }>;
  private readonly mailRuns: DueWork<{ id: string }>;

  constructor(
    private readonly deps: {
      pool: pg.Pool;
      bus: WorkQueue;
      wakeups: DueWakeups;
      commands: CommandContext;
      aiConfigured: boolean;
    },
    private readonly options: TaskSchedulerOptions = DEFAULT_TASK_SCHEDULER_OPTIONS,
    private readonly onTick: (outcome: TickOutcome) => void = () => {},
  ) {
    this.work = new DueWork<{ task_id: string; seq: number }>(
      deps,
      options.queue,
      { pollMs: options.pollMs, staleAfterMs: options.staleAfterMs, label: 'task schedule' },
      {
        table: 'task_schedules',
        key: 'task_id',
        waiting: 'active AND next_run_at IS NOT NULL',
        when: 'next_run_at',
        order: 'next_run_at',
        returning: 'r.task_id, r.seq',
      },
      (r) => ({ id: `${r.task_id}.${r.seq}`, payload: { taskId: r.task_id, seq: r.seq } }),
    );
    this.mailRuns = new DueWork<{ id: string }>(
      deps,
      `${options.queue}-mail`,
      { pollMs: options.pollMs, staleAfterMs: options.staleAfterMs, label: 'task mail runs' },
      { table: 'task_mail_runs', key: 'id', waiting: 'true', order: 'id', returning: 'r.id' },
      (r) => ({ id: r.id, payload: { runId: r.id } }),
    );
  }

  async start(): Promise<void> {
    await this.work.start((job) => this.handle(job), {
      concurrency: this.options.concurrency,
      retryOnErrorMs: 1000,
      onError: (error) => console.error('task schedule:', error),
    });
    await this.mailRuns.start(
      async (job) => {
        this.onTick(await this.mailRun((job.payload as { runId: string }).runId));
        return { ack: true };
      },
      {
        concurrency: this.options.concurrency,
        retryOnErrorMs: 1000,
        onError: (error) => console.error('task mail run:', error),
      },
    );
  }

  async stop(): Promise<void> {
    await this.mailRuns.stop();
    await this.work.stop();
  }

  private async handle(job: Job): Promise<JobOutcome> {
    const { taskId, seq } = job.payload as { taskId: string; seq: number };
    this.onTick(await this.tick(taskId, seq));
    return { ack: true };
  }

  /** Queues the slot of one due row (unless its seq moved on) and moves the row to the next instant. */
  async tick(taskId: string, seq: number): Promise<TickOutcome> {
    const { rows } = await this.deps.pool.query<Row>(
      `SELECT task_id, workspace_id, trigger, settings, max_runs_per_day, next_run_at FROM task_schedules
       WHERE task_id = $1 AND seq = $2 AND active AND next_run_at IS NOT NULL`,
      [taskId, seq],
    );
    const row = rows[0];
    if (!row) return 'stale';
    const slot = row.next_run_at.toISOString();
    const now = new Date();
    const outcome: TickOutcome = this.deps.aiConfigured
      ? await this.queue(row, { runId: digestId('scheduledTaskRun', `${taskId} ${slot}`), slot, messageId: null })
      : 'skipped';
    const after = new Date(Math.max(row.next_run_at.getTime(), now.getTime()));
    await this.deps.pool.query(
      `UPDATE task_schedules SET next_run_at = $3, enqueued_at = NULL, seq = seq + 1
       WHERE task_id = $1 AND seq = $2`,
      [taskId, seq, nextScheduledRun(row.trigger, after)],
    );
    return outcome;
  }

  /** Queues a run arriving mail started, if its task is still active, then forgets the row. */
  async mailRun(runId: string): Promise<TickOutcome> {
    const { rows } = await this.deps.pool.query<Omit<Row, 'next_run_at'> & { message_id: string }>(
      `SELECT m.task_id, m.workspace_id, m.message_id, s.settings, s.max_runs_per_day FROM task_mail_runs m
       JOIN task_schedules s ON s.task_id = m.task_id AND s.active WHERE m.id = $1`,
      [runId],
    );
    const row = rows[0];
    let outcome: TickOutcome = row ? 'skipped' : 'stale';
    if (row && this.deps.aiConfigured)
      outcome = await this.queue(row, { runId, slot: null, messageId: row.message_id });
    await this.deps.pool.query('DELETE FROM task_mail_runs WHERE id = $1', [runId]);
    return outcome;
  }

  private async queue(
    row: Pick<Row, 'task_id' | 'workspace_id' | 'settings' | 'max_runs_per_day'>,
    run: { runId: string; slot: string | null; messageId: string | null },
  ): Promise<TickOutcome> {
    try {
      const queued = await queueTaskRun(
        this.deps.commands,
        { workspaceId: row.workspace_id, kind: 'system', id: null },
        {
          ...run,
          taskId: row.task_id,
          source: run.slot === null ? 'mail' : 'schedule',
          maxRunsPerDay: row.max_runs_per_day,
          settings: row.settings,
        },
        new Date().toISOString(),
      );
      return queued === null ? 'repeated' : 'queued';
    } catch (error) {
      if (!(error instanceof DomainError && error.code === 'task_run_limit_reached')) throw error;
      return 'held';
    }
  }
}
