import type pg from 'pg';
import { completeBroadcast, loadBroadcast, startBroadcast } from '../../commands/broadcasts/handlers.ts';
import { sendEmail, type SendContext } from '../../commands/emails/handlers.ts';
import { type Actor, deferredWrites } from '../../commands/execute.ts';
import { DomainError } from '../../domain/shared/errors.ts';
import { digestId } from '../../domain/shared/ids.ts';
import { workspaceOfPartition } from '../../domain/shared/partitions.ts';
import type { Delivery as Job, JobOutcome, WorkQueue } from '../../infra/bus/port.ts';
import { type DueWork, type RunStep, runStepWork, type DueWakeups } from '../due-work.ts';
import { inTurns } from '../in-turns.ts';

export interface BroadcastOptions {
  /** The bus queue of run steps; one per database (jobs name rows of it). */
  queue: string;
  pollMs: number;
  /** A step enqueued this long ago without an outcome is enqueued again (its process died). */
  staleAfterMs: number;
  /** Broadcasts stepped at once by this process. */
  concurrency: number;
  /** Recipients per step: the most a step holds in memory. */
  pageSize: number;
  /** Sends under way at once within a page. */
  sendConcurrency: number;
  /** How long a broadcast waits when its lane is paused or the month's allowance is spent. */
  holdMs: number;
}

export const DEFAULT_BROADCAST_OPTIONS: BroadcastOptions = {
  queue: 'broadcast-runs',
  pollMs: 100,
  staleAfterMs: 120_000,
  concurrency: 4,
  pageSize: 250,
  sendConcurrency: 64,
  holdMs: 60_000,
};

interface Run {
  id: string;
  workspace_id: string;
  status: 'scheduled' | 'sending' | 'done';
  from_address: string;
  template_id: string;
  subject: string | null;
  audience_ids: string[];
  seq: number;
}

interface Recipient {
  seq: number;
  contact_id: string;
  email: string;
  audience_id: string | null;
  props: Record<string, unknown>;
}

/** Refusals that say "not now" for the whole broadcast, not "never" for one recipient. */
const HOLD = new Set(['stream_paused', 'send_quota_exceeded']);

/** The email of one recipient of one broadcast: the same on every attempt, so a resumed page never sends twice. */
export const broadcastEmailId = (broadcastId: string, contactId: string) =>
  digestId('broadcastEmail', `${broadcastId}/${contactId}`);

/**
 * The sending half of broadcasts. A run (schedule.ts) is due at its time; each job takes one step
 * of it, from where the row stands, and moves `seq` on, so a duplicate job is a no-op:
 *  - the start takes the recipients from the audiences' read model into `broadcast_recipients`
 *    (one INSERT … SELECT: a consistent snapshot that never passes through this process's memory),
 *    then appends `BroadcastStarted` with their count; a cancel appended first wins, and the rows
 *    go again;
 *  - each later step sends the next page of unsent recipients through `sendEmail` (the broadcast
 *    lane, suppressions, unsubscribes, the quota) and marks them sent with the email or the
 *    refusal; when none is left, `BroadcastCompleted`.
 * A crash anywhere repeats at most the page under way: each recipient's email id is a digest of
 * the broadcast and the contact, and a send with an id already accepted is a replay.
 */
export class BroadcastProcess {
  private readonly work: DueWork<RunStep>;
  /** Per broadcast under way here, the wait for its last page's writes to reach the read models. */
  private readonly previous = new Map<string, () => Promise<void>>();

  constructor(
    private readonly deps: { pool: pg.Pool; bus: WorkQueue; wakeups: DueWakeups; sending: SendContext },
    private readonly options: BroadcastOptions = DEFAULT_BROADCAST_OPTIONS,
  ) {
    this.work = runStepWork(deps, options, 'broadcast', 'broadcast_runs', "status <> 'done'");
  }

  async start(): Promise<void> {
    await this.work.start((job) => this.handle(job), {
      concurrency: this.options.concurrency,
      retryOnErrorMs: 1000,
      onError: (error) => console.error('broadcast:', error),
    });
  }

  async stop(): Promise<void> {
    await this.work.stop();
  }

  private async handle(job: Job): Promise<JobOutcome> {
    const { id, seq } = job.payload as { id: string; seq: number };
    const { rows } = await this.deps.pool.query<Run>(
      "SELECT * FROM broadcast_runs WHERE id = $1 AND seq = $2 AND status <> 'done' AND due_at <= now()",
      [id, seq],
    );
    const run = rows[0];
    if (!run) return { ack: true };
    const actor: Actor = { workspaceId: run.workspace_id, kind: 'system', id: run.id };
    if (run.status === 'scheduled') await this.begin(run, actor);
    else await this.sendPage(run, actor);
    return { ack: true };
  }

  /** The run's next step: due after `delayMs`, in `status`. Only from the step read (`seq`). */
  private async advance(run: Run, status: Run['status'], delayMs = 0): Promise<void> {
    await this.deps.pool.query(
      `UPDATE broadcast_runs SET seq = seq + 1, enqueued_at = NULL, status = $3,
         due_at = now() + make_interval(secs => $4::double precision / 1000)
       WHERE id = $1 AND seq = $2`,
      [run.id, run.seq, status, delayMs],
    );
  }

  private async begin(run: Run, actor: Actor): Promise<void> {
    const commands = this.deps.sending.commands;
    const { state } = await loadBroadcast(commands, run.workspace_id, run.id);
    if (state.status === 'scheduled') {
      const taken = await this.snapshot(run);
      const after = await startBroadcast(commands, actor, run.id, taken, new Date().toISOString());
      if (after.status !== 'sending') {
        await this.deps.pool.query('DELETE FROM broadcast_recipients WHERE broadcast_id = $1', [run.id]);
        return this.advance(run, 'done');
      }
      return this.advance(run, 'sending');
    }
    // Started before a crash (the rows are the ones it counted), or cancelled, or never created.
    return this.advance(run, state.status === 'sending' ? 'sending' : 'done');
  }

  /**
   * The recipients as the read models hold them now: every contact of the partition in one of the
   * audiences (taken once, from the first audience listed that holds it), less suppressed
   * addresses and those unsubscribed from everything or from that audience. Props: the contact's
   * attributes, its `email` and `name`. A repeat (a crash before the start was appended) takes
   * them afresh.
   */
  private async snapshot(run: Run): Promise<number> {
    const client = await this.deps.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('DELETE FROM broadcast_recipients WHERE broadcast_id = $1', [run.id]);
      const inserted = await client.query(
        `INSERT INTO broadcast_recipients (broadcast_id, seq, contact_id, email, audience_id, props)
         SELECT $1, row_number() OVER (ORDER BY c.id), c.id, c.email,
                CASE WHEN m.builtin IS NULL THEN m.audience_id END,
                c.attributes || jsonb_build_object('email', c.email)
                  || CASE WHEN c.name IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('name', c.name) END
         FROM contacts c
         JOIN LATERAL (
           SELECT am.audience_id, a.builtin FROM audience_members am JOIN audiences a ON a.id = am.audience_id
           WHERE am.contact_id = c.id AND am.left_at IS NULL AND am.audience_id = ANY($3::text[])
           ORDER BY array_position($3::text[], am.audience_id) LIMIT 1
         ) m ON true
         WHERE c.workspace_id = $2
           AND NOT EXISTS (SELECT 1 FROM suppressions s WHERE s.workspace_id = $2 AND s.email = c.email)
           AND NOT EXISTS (SELECT 1 FROM unsubscribes u WHERE u.workspace_id = $2 AND u.email = c.email
                             AND (u.audience_id IS NULL OR u.audience_id = m.audience_id))`,
        [run.id, run.workspace_id, run.audience_ids],
      );
      await client.query('COMMIT');
      return inserted.rowCount ?? 0;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }

  private async sendPage(run: Run, actor: Actor): Promise<void> {
    const { rows } = await this.deps.pool.query<Recipient>(
      `SELECT seq, contact_id, email, audience_id, props FROM broadcast_recipients
       WHERE broadcast_id = $1 AND sent_at IS NULL ORDER BY seq LIMIT $2`,
      [run.id, this.options.pageSize],
    );
    if (rows.length === 0) {
      const { rows: counts } = await this.deps.pool.query<{ accepted: number; refused: number }>(
        `SELECT count(email_id)::int AS accepted, count(refusal_code)::int AS refused
         FROM broadcast_recipients WHERE broadcast_id = $1`,
        [run.id],
      );
      this.previous.delete(run.id);
      await completeBroadcast(this.deps.sending.commands, actor, run.id, counts[0]!, new Date().toISOString());
      return this.advance(run, 'done');
    }
    // The page's sends wait for the read models once, together (deferredWrites): past its deadline
    // a wait per recipient failed the page.
    const writes = deferredWrites(this.deps.sending.commands);
    const sending = { ...this.deps.sending, commands: writes.commands };
    const outcomes = await inTurns(rows, this.options.sendConcurrency, (r) => this.send(sending, run, actor, r));
    // The read models may trail by this page, not more: the previous page's writes are waited for.
    await this.previous.get(run.id)?.();
    this.previous.set(run.id, writes.settled);
    const done = outcomes.filter((o) => o.code === null || !HOLD.has(o.code));
    if (done.length > 0)
      await this.deps.pool.query(
        `UPDATE broadcast_recipients r SET email_id = o.email_id, refusal_code = o.code, sent_at = now()
         FROM unnest($2::int[], $3::text[], $4::text[]) AS o(seq, email_id, code)
         WHERE r.broadcast_id = $1 AND r.seq = o.seq`,
        [run.id, done.map((o) => o.seq), done.map((o) => o.emailId), done.map((o) => o.code)],
      );
    const held = done.length < outcomes.length;
    if (held) console.warn(`broadcast ${run.id}: held for ${this.options.holdMs} ms (lane paused or allowance spent)`);
    return this.advance(run, 'sending', held ? this.options.holdMs : 0);
  }

  private async send(
    sending: SendContext,
    run: Run,
    actor: Actor,
    r: Recipient,
  ): Promise<{ seq: number; emailId: string | null; code: string | null }> {
    const partition = run.workspace_id;
    try {
      const { email } = await sendEmail(
        sending,
        {
          actor,
          mode: partition === workspaceOfPartition(partition) ? 'live' : 'test',
          reach: null,
          source: 'broadcast',
        },
        {
          emailId: broadcastEmailId(run.id, r.contact_id),
          from: run.from_address,
          to: r.email,
          ...(run.subject !== null ? { subject: run.subject } : {}),
          template: { id: run.template_id, props: r.props, looseProps: true },
          broadcast: { id: run.id, audienceId: r.audience_id },
        },
        new Date(),
      );
      return { seq: r.seq, emailId: email.emailId, code: null };
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      return { seq: r.seq, emailId: null, code: error.code };
    }
  }
}
