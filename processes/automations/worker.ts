import { CONTACT_EVENT_TYPES } from '../../domain/contact-events/events.ts';
import { digestId } from '../../domain/shared/ids.ts';
import type pg from 'pg';
import { sendEmail, type SendContext } from '../../commands/emails/handlers.ts';
import type { ReadModelBarrier } from '../../commands/execute.ts';
import { DomainError } from '../../domain/shared/errors.ts';
import type { Instruction } from '../../domain/automations/steps.ts';
import type { Delivery as Job, JobOutcome, WorkQueue } from '../../infra/bus/port.ts';
import { DueWork, type DueWakeups } from '../due-work.ts';
import { Repeating } from '../repeating.ts';

export interface AutomationRunOptions {
  /** The bus queue of run steps; one per database (jobs name rows of it). */
  queue: string;
  /** How long one minute of a `wait`, a timeout or `withinMinutes` lasts (tests shorten it). */
  minuteMs: number;
  /**
   * A job enqueued this long ago without an outcome is enqueued again; a send request unsent this
   * long after its step committed is sent by the sweep (`sendOrphans`).
   */
  staleAfterMs: number;
  pollMs: number;
  concurrency: number;
}

export const DEFAULT_AUTOMATION_OPTIONS: AutomationRunOptions = {
  queue: 'automation-runs',
  minuteMs: 60_000,
  staleAfterMs: 60_000,
  pollMs: 50,
  concurrency: 16,
};

interface Run {
  id: string;
  workspace_id: string;
  automation_id: string;
  contact_id: string;
  email: string;
  properties: Record<string, unknown>;
  program: Instruction[];
  pc: number;
  status: 'ready' | 'waiting' | 'completed';
  wait_event: string | null;
  wake_at: Date | null;
  seq: number;
  /** Names of events that came while the run was between steps (enrol.ts). */
  arrivals: string[];
  position: string;
  trigger_event_id: string;
  enrolled_at: Date;
}

/** Steps walked at most per job, so a (valid but long) program cannot hold a row lock for long. */
const MAX_STEPS_PER_JOB = 200;

/**
 * The timer half of automations. Runs live in `automation_runs` (made by enrol.ts): `ready` runs
 * and `waiting` runs whose `wake_at` has passed are due. A loop claims due runs (`FOR UPDATE SKIP
 * LOCKED`, so several processes share the work) and publishes one job each on the bus; a job walks
 * its run in one transaction, from where it stands to the next wait or the end: a `send` records a
 * send request (sent once the step's transaction commits: `sendRequested`), a `branch` asks the contact events read model whether the event came, `wait` and
 * `wait_for_event` store their deadline in the row, unless an event of that name already came
 * while the run was on its way there (`arrivals`): then that wait is over at once. The database
 * holds every timer, so a restart loses none: a starting process publishes everything due at once,
 * and a job the bus lost is published again after `staleAfterMs`. `seq` counts the run's moves,
 * so a duplicate job is a no-op.
 */
export class AutomationRunProcess {
  private readonly work: DueWork<{ id: string; seq: number }>;
  private readonly orphans: Repeating;
  private everyOrphan = true;

  constructor(
    private readonly deps: {
      pool: pg.Pool;
      bus: WorkQueue;
      wakeups: DueWakeups;
      readModels: ReadModelBarrier;
      sending: SendContext;
    },
    private readonly options: AutomationRunOptions = DEFAULT_AUTOMATION_OPTIONS,
  ) {
    this.work = new DueWork<{ id: string; seq: number }>(
      deps,
      options.queue,
      { pollMs: options.pollMs, staleAfterMs: options.staleAfterMs, label: 'automation' },
      {
        table: 'automation_runs',
        key: 'id',
        waiting: "status <> 'completed'",
        when: 'wake_at',
        order: 'wake_at',
        returning: 'r.id, r.seq',
      },
      (r) => ({ id: `${r.id}.${r.seq}`, payload: { runId: r.id, seq: r.seq } }),
    );
    this.orphans = new Repeating('automation sends', () => this.sendOrphans(), options.pollMs);
  }

  async start(): Promise<void> {
    await this.work.start((job) => this.handle(job), {
      concurrency: this.options.concurrency,
      retryOnErrorMs: 1000,
      onError: (error) => console.error('automation run:', error),
    });
    this.orphans.start();
  }

  async stop(): Promise<void> {
    await this.orphans.stop();
    await this.work.stop();
  }

  /**
   * Sends the requests a job left unsent: its process died (or its send failed) after the step's
   * transaction committed, and the run, completed or waiting for days, has no job soon to send
   * them. On start every unsent request, after that those older than `staleAfterMs` (a live job
   * sends its own first). A request sent twice is one email: its id follows from the request's.
   */
  private async sendOrphans(): Promise<number> {
    const { rows } = await this.deps.pool.query<{ run_id: string }>(
      `SELECT DISTINCT run_id FROM automation_sends
       WHERE sent_at IS NULL AND ($1 OR created_at < now() - make_interval(secs => $2::double precision / 1000))
       LIMIT 100`,
      [this.everyOrphan, this.options.staleAfterMs],
    );
    this.everyOrphan = false;
    for (const { run_id } of rows) await this.sendRequested(run_id);
    return rows.length === 100 ? 0 : this.options.staleAfterMs / 2;
  }

  private async handle(job: Job): Promise<JobOutcome> {
    const { runId, seq } = job.payload as { runId: string; seq: number };
    const peek = await this.deps.pool.query<{ position: string }>(
      'SELECT position FROM automation_runs WHERE id = $1 AND seq = $2',
      [runId, seq],
    );
    if (!peek.rows[0]) return { ack: true };
    // A branch reads the contact events read model: it must hold every event up to the one that moved this run.
    await this.deps.readModels.waitFor(Number(peek.rows[0].position), CONTACT_EVENT_TYPES);
    const client = await this.deps.pool.connect();
    try {
      await client.query('BEGIN');
      const { rows } = await client.query<Run>('SELECT * FROM automation_runs WHERE id = $1 AND seq = $2 FOR UPDATE', [
        runId,
        seq,
      ]);
      const run = rows[0];
      if (!run || run.status === 'completed' || (run.status === 'waiting' && run.wake_at!.getTime() > Date.now())) {
        await client.query('ROLLBACK');
        return { ack: true };
      }
      await this.walk(client, run);
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      client.release();
    }
    await this.sendRequested(runId);
    return { ack: true };
  }

  /**
   * Sends what the run's `send` steps requested, through the one way every send goes
   * (`sendEmail`): the template's published version with the props, suppressions, the quota, the
   * broadcast lane. Outside the step's transaction, so no run row stays locked while the send
   * waits for its read models. The email id follows from the request's id, so a request sent
   * again (a crash before its outcome was written) answers the same email. The outcome, the email
   * or the refusal's code, is written on the request (`GET /automations/{id}/sends`). A failure of
   * the service (not a refusal) leaves it to the run's next job or the sweep (`sendOrphans`).
   */
  private async sendRequested(runId: string): Promise<void> {
    const { rows } = await this.deps.pool.query<{
      id: string;
      workspace_id: string;
      automation_id: string;
      email: string;
      template: string;
      subject: string | null;
      data: Record<string, unknown>;
      from_address: string | null;
    }>(
      `SELECT id, workspace_id, automation_id, email, template, subject, data, from_address FROM automation_sends
       WHERE run_id = $1 AND sent_at IS NULL ORDER BY created_at, id`,
      [runId],
    );
    for (const request of rows) {
      let outcome: { emailId: string | null; code: string | null; message: string | null };
      try {
        if (request.from_address === null)
          throw new DomainError('invalid_parameter', 'The send step names no `from` address.', 'from');
        const { email } = await sendEmail(
          this.deps.sending,
          {
            actor: { workspaceId: request.workspace_id, kind: 'system', id: request.automation_id },
            mode: 'live',
            reach: null,
            source: 'automation',
          },
          {
            emailId: `em_${request.id.slice(request.id.indexOf('_') + 1)}`,
            from: request.from_address,
            to: request.email,
            ...(request.subject !== null ? { subject: request.subject } : {}),
            template: { id: request.template, props: request.data, looseProps: true },
          },
          new Date(),
        );
        outcome = { emailId: email.emailId, code: null, message: null };
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        outcome = { emailId: null, code: error.code, message: error.message };
      }
      await this.deps.pool.query(
        `UPDATE automation_sends SET email_id = $2, refusal_code = $3, refusal_message = $4, sent_at = now()
         WHERE id = $1 AND sent_at IS NULL`,
        [request.id, outcome.emailId, outcome.code, outcome.message],
      );
    }
  }

  /** From where the run stands to its next wait or its end, in the caller's transaction. */
  private async walk(client: pg.PoolClient, run: Run): Promise<void> {
    const minute = this.options.minuteMs;
    // A due waiting run: its wait is over (the duration passed, or the event did not come in time).
    let pc = run.status === 'waiting' ? run.pc + 1 : run.pc;
    const arrivals = new Set(run.arrivals);
    let next: { status: Run['status']; waitEvent: string | null; wakeAt: Date | null } = {
      status: 'completed',
      waitEvent: null,
      wakeAt: null,
    };
    for (let steps = 0; pc < run.program.length; steps++) {
      if (steps >= MAX_STEPS_PER_JOB) {
        next = { status: 'ready', waitEvent: null, wakeAt: new Date() };
        break;
      }
      const step = run.program[pc]!;
      if (step.op === 'jump') {
        pc = step.to;
      } else if (step.op === 'send') {
        const id = digestId('automationSend', `${run.id}/${pc}/${run.seq}`);
        await client.query(
          `INSERT INTO automation_sends (id, workspace_id, automation_id, run_id, contact_id, email, template, subject, data, from_address, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, date_trunc('milliseconds', now())) ON CONFLICT (id) DO NOTHING`,
          [
            id,
            run.workspace_id,
            run.automation_id,
            run.id,
            run.contact_id,
            run.email,
            step.template,
            step.subject,
            JSON.stringify({ ...run.properties, ...step.data }),
            step.from ?? null,
          ],
        );
        pc++;
      } else if (step.op === 'branch') {
        const since =
          step.withinMinutes === null ? run.enrolled_at : new Date(Date.now() - step.withinMinutes * minute);
        // The trigger occurred as the run was enrolled; it is not an event since then.
        const { rows } = await client.query(
          `SELECT 1 FROM contact_events WHERE workspace_id = $1 AND contact_id = $2 AND name = $3 AND mode = 'live' AND occurred_at >= $4
             AND id IS DISTINCT FROM $5 LIMIT 1`,
          [
            run.workspace_id,
            run.contact_id,
            step.ifEvent,
            since,
            step.withinMinutes === null ? run.trigger_event_id : null,
          ],
        );
        pc = rows.length > 0 ? pc + 1 : step.elseAt;
      } else if (step.op === 'wait') {
        next = { status: 'waiting', waitEvent: null, wakeAt: new Date(Date.now() + step.minutes * minute) };
        break;
      } else if (arrivals.delete(step.name)) {
        pc++;
      } else {
        next = { status: 'waiting', waitEvent: step.name, wakeAt: new Date(Date.now() + step.timeoutMinutes * minute) };
        break;
      }
    }
    // Once the run stops at a wait, what came before that wait began ends nothing.
    const kept = next.status === 'ready' ? [...arrivals] : [];
    await client.query(
      `UPDATE automation_runs SET pc = $2, status = $3, wait_event = $4, wake_at = $5, arrivals = $6::jsonb, enqueued_at = NULL, seq = seq + 1,
         completed_at = CASE WHEN $3 = 'completed' THEN now() ELSE NULL END
       WHERE id = $1`,
      [run.id, pc, next.status, next.waitEvent, next.wakeAt, JSON.stringify(kept)],
    );
  }
}
