import type pg from 'pg';
import type { CommandContext } from '../../commands/execute.ts';
import { pauseStream } from '../../commands/sending-streams/handlers.ts';
import type { SendingStream } from '../../domain/emails/events.ts';
import type { PauseReason } from '../../domain/sending-streams/events.ts';
import type { Delivery as Job, JobOutcome, WorkQueue } from '../../infra/bus/port.ts';
import { DueWork, type DueWakeups } from '../due-work.ts';

export interface LanePauseOptions {
  queue: string;
  pollMs: number;
  staleAfterMs: number;
}

export const DEFAULT_LANE_PAUSE_OPTIONS: LanePauseOptions = {
  queue: 'sending-lane-pauses',
  pollMs: 200,
  staleAfterMs: 60_000,
};

interface Owed {
  workspace_id: string;
  stream: SendingStream;
  trip: { reason: PauseReason; rate: number; sent: number; bounced: number; complained: number };
}

/**
 * Appends the pauses the guard (guard.ts) found owed. The pause event clears the mark as the guard
 * follows it; a job lost or a worker killed leaves the mark, and the pause is appended again
 * (deciding nothing for a lane paused already).
 */
export class LanePauseProcess {
  private readonly work: DueWork<{ id: string; claims: number }>;

  constructor(
    private readonly deps: { pool: pg.Pool; bus: WorkQueue; wakeups: DueWakeups; commands: CommandContext },
    options: LanePauseOptions = DEFAULT_LANE_PAUSE_OPTIONS,
  ) {
    this.work = new DueWork(
      deps,
      options.queue,
      { pollMs: options.pollMs, staleAfterMs: options.staleAfterMs, label: 'sending lane pause' },
      {
        table: 'sending_lane_guard',
        key: 'id',
        waiting: 'trip IS NOT NULL AND NOT paused',
        order: 'id',
        set: 'claims = r.claims + 1',
        returning: 'r.id, r.claims',
      },
      (d) => ({ id: `${d.id}.${d.claims}`, payload: { id: d.id, claims: d.claims } }),
    );
  }

  async start(): Promise<void> {
    await this.work.start((job) => this.handle(job), {
      concurrency: 4,
      onError: (error) => console.error('sending lane pause:', error),
    });
  }

  async stop(): Promise<void> {
    await this.work.stop();
  }

  private async handle(job: Job): Promise<JobOutcome> {
    const { id, claims } = job.payload as { id: string; claims: number };
    const { rows } = await this.deps.pool.query<Owed>(
      'SELECT workspace_id, stream, trip FROM sending_lane_guard WHERE id = $1 AND claims = $2 AND trip IS NOT NULL AND NOT paused',
      [id, claims],
    );
    const owed = rows[0];
    if (!owed) return { ack: true };
    const { reason, rate, ...counts } = owed.trip;
    await pauseStream(
      this.deps.commands,
      { workspaceId: owed.workspace_id, kind: 'system', id: null },
      { stream: owed.stream, reason, rate, counts },
      new Date().toISOString(),
    );
    return { ack: true };
  }
}
