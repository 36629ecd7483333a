import type pg from 'pg';
import type { Delivery as Job, JobOutcome, WorkQueue } from '../infra/bus/port.ts';
import type { MailSender, OutboundMessage } from '../infra/mail/port.ts';
import { DueWork, type DueWakeups } from './due-work.ts';

/** How a process of owed mails runs; each kind has its own queue. */
export interface OwedMailOptions {
  /** The bus queue of its jobs; one per database (jobs name rows of it). */
  queue: string;
  /** Delay before the next try after try n failed; the last one repeats until the mail is sent. */
  retryMs: number[];
  /** A job enqueued this long ago without an outcome is enqueued again. */
  staleAfterMs: number;
  pollMs: number;
  /** The sender of the mails. */
  from: string;
  /** Where this service is reached from outside: the mailed links start with it. */
  publicUrl: string;
}

export const OWED_MAIL_DEFAULTS: Omit<OwedMailOptions, 'queue'> = {
  retryMs: [5_000, 60_000, 600_000, 3_600_000],
  staleAfterMs: 60_000,
  pollMs: 500,
  from: 'Workspace Mail Service <no-reply@localhost>',
  publicUrl: 'http://localhost:3000',
};

/**
 * One kind of owed mail. Its reactor keeps `table`, keyed by the log `position` of the event that
 * owed the mail, with the columns `attempts`, `next_attempt_at`, `enqueued_at`, `last_error` and
 * `sent_at`; this says how to read an owed row and what to mail for it.
 */
export interface OwedMailKind<Row> {
  table: string;
  /** For logs and job ids. */
  label: string;
  jobPrefix: string;
  /** The row of this try, still owed and claimed (`enqueued_at` set, `sent_at` null), or none. */
  owed(pool: pg.Pool, position: string, attempts: number): Promise<Row | undefined>;
  /** A mail that would no longer help (its link expired): dropped unsent. */
  lapsed?(row: Row): boolean;
  /** Names the mail in a log line. */
  describe(row: Row): string;
  mail(row: Row, options: OwedMailOptions): Omit<OutboundMessage, 'from'>;
}

/**
 * Mails the rows a reactor owes (claimed onto the bus like webhook notices) until each is handed
 * over, then marks it sent, so a restart sends nothing already marked; a failed try is tried again
 * after `retryMs`. A mail goes twice only when a process dies between the hand-over and the mark,
 * or a send outlasts `staleAfterMs`; both carry the same link.
 */
export class OwedMailProcess<Row> {
  private readonly work: DueWork<{ position: string; attempts: number }>;

  constructor(
    private readonly deps: { pool: pg.Pool; bus: WorkQueue; wakeups: DueWakeups; mail: MailSender },
    private readonly kind: OwedMailKind<Row>,
    private readonly options: OwedMailOptions,
  ) {
    this.work = new DueWork<{ position: string; attempts: number }>(
      deps,
      options.queue,
      { pollMs: options.pollMs, staleAfterMs: options.staleAfterMs, label: kind.label },
      {
        table: kind.table,
        key: 'position',
        waiting: 'sent_at IS NULL',
        when: 'next_attempt_at',
        order: 'next_attempt_at',
        set: 'attempts = r.attempts + 1',
        returning: 'r.position, r.attempts',
      },
      (m) => ({
        id: `${kind.jobPrefix}-${m.position}.${m.attempts}`,
        payload: { position: m.position, attempts: m.attempts },
      }),
    );
  }

  start(): Promise<void> {
    return this.work.start((job) => this.handle(job), {
      onError: (error) => console.error(`${this.kind.label}:`, error),
    });
  }

  stop(): Promise<void> {
    return this.work.stop();
  }

  private async handle(job: Job): Promise<JobOutcome> {
    const { position, attempts } = job.payload as { position: string; attempts: number };
    const { pool } = this.deps;
    const table = this.kind.table;
    const owed = await this.kind.owed(pool, position, attempts);
    if (!owed) return { ack: true };
    if (this.kind.lapsed?.(owed)) {
      await pool.query(`DELETE FROM ${table} WHERE position = $1 AND sent_at IS NULL`, [position]);
      return { ack: true };
    }
    try {
      await this.deps.mail.send({ from: this.options.from, ...this.kind.mail(owed, this.options) });
    } catch (error) {
      console.error(`${this.kind.label} for ${this.kind.describe(owed)} (try ${attempts}):`, error);
      const delay = this.options.retryMs[Math.min(attempts, this.options.retryMs.length) - 1] ?? 0;
      await pool.query(
        `UPDATE ${table} SET enqueued_at = NULL, last_error = $3, next_attempt_at = now() + make_interval(secs => $4::double precision / 1000)
         WHERE position = $1 AND attempts = $2`,
        [position, attempts, String((error as Error).message ?? error).slice(0, 300), delay],
      );
      return { ack: true };
    }
    await pool.query(`UPDATE ${table} SET enqueued_at = NULL, sent_at = now() WHERE position = $1`, [position]);
    return { ack: true };
  }
}

/** `publicUrl` and a path, with one slash between them. */
export const publicLink = (options: OwedMailOptions, path: string) => `${options.publicUrl.replace(/\/+$/, '')}${path}`;
