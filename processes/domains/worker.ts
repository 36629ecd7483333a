import type pg from 'pg';
import { checkDomainRecords } from '../../commands/domains/check.ts';
import type { DomainPorts } from '../../commands/domains/handlers.ts';
import type { CommandContext } from '../../commands/execute.ts';
import { DomainError } from '../../domain/shared/errors.ts';
import type { Delivery, JobOutcome, WorkQueue } from '../../infra/bus/port.ts';
import { DueWork, type DueWakeups } from '../due-work.ts';

export interface DomainCheckOptions {
  /** The bus queue of checks; one per database (jobs name rows of it). */
  queue: string;
  /** Between checks of a domain being set up (added, a host set, a key rotated, within `attentionMs`). */
  soonMs: number;
  /** Between checks of any other domain: settled ones, and ones left unfinished longer than `attentionMs`. */
  settledMs: number;
  attentionMs: number;
  pollMs: number;
  staleAfterMs: number;
  /** Checks at once in this process; each asks DNS about seven names at once. */
  concurrency: number;
}

/**
 * Every 10 minutes while an owner is setting a domain up (the first three days, and again after a
 * host change or a key rotation), then every 6 hours: often enough that a negative verdict never
 * reaches the day after which it counts as unknown (domain/domains/sending.ts), and that a record
 * removed from a working domain is noticed the same day.
 */
export const DEFAULT_DOMAIN_CHECK_OPTIONS: DomainCheckOptions = {
  queue: 'domain-checks',
  soonMs: 10 * 60_000,
  settledMs: 6 * 3_600_000,
  attentionMs: 3 * 24 * 3_600_000,
  pollMs: 1_000,
  staleAfterMs: 60_000,
  concurrency: 16,
};

const ms = (value: number, name: string) => {
  if (!Number.isFinite(value) || value < 0) throw new RangeError(`domain checks: ${name} must be a duration in ms`);
  return value;
};

/**
 * The background re-check: claims domains whose check is due (schedule.ts keeps the table),
 * publishes one job each on the bus, and a job runs the check command, as the system. The check
 * records DomainChecked, which moves the domain's next time in the schedule.
 */
export class DomainCheckProcess {
  private readonly work: DueWork<{ domain_id: string; workspace_id: string; checks: number }>;

  constructor(
    private readonly deps: {
      pool: pg.Pool;
      bus: WorkQueue;
      wakeups: DueWakeups;
      commands: CommandContext;
      ports: DomainPorts;
    },
    private readonly options: DomainCheckOptions = DEFAULT_DOMAIN_CHECK_OPTIONS,
  ) {
    const soon = ms(options.soonMs, 'soonMs') / 1000;
    const later = ms(options.settledMs, 'settledMs') / 1000;
    const attention = ms(options.attentionMs, 'attentionMs') / 1000;
    this.work = new DueWork(
      deps,
      options.queue,
      { pollMs: options.pollMs, staleAfterMs: options.staleAfterMs, label: 'domain check' },
      {
        table: 'domain_check_schedule',
        key: 'domain_id',
        waiting: 'TRUE',
        when: `coalesce(last_checked_at + make_interval(secs =>
          CASE WHEN NOT settled AND attention_since > now() - make_interval(secs => ${attention}) THEN ${soon} ELSE ${later} END),
          '-infinity')`,
        order: 'last_checked_at NULLS FIRST',
        returning: 'r.domain_id, r.workspace_id, r.checks',
      },
      (r) => ({
        id: `${r.domain_id}.${r.checks}`,
        payload: { domainId: r.domain_id, workspaceId: r.workspace_id, checks: r.checks },
      }),
    );
  }

  start(): Promise<void> {
    return this.work.start((job) => this.handle(job), {
      concurrency: this.options.concurrency,
      retryOnErrorMs: 5_000,
      onError: (error) => console.error('domain check:', error),
    });
  }

  stop(): Promise<void> {
    return this.work.stop();
  }

  private async handle(job: Delivery): Promise<JobOutcome> {
    const { domainId, workspaceId, checks } = job.payload as { domainId: string; workspaceId: string; checks: number };
    const { rows } = await this.deps.pool.query<{ checks: number }>(
      'SELECT checks FROM domain_check_schedule WHERE domain_id = $1',
      [domainId],
    );
    // Deleted, or checked since the job was published (a read or the verify operation).
    if (rows[0]?.checks !== checks) return { ack: true };
    try {
      await checkDomainRecords(
        this.deps.commands,
        this.deps.ports,
        { workspaceId, kind: 'system', id: null },
        domainId,
        'schedule',
      );
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
    }
    return { ack: true };
  }
}
