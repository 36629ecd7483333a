import type { Consumer, ConsumeOptions, Job, JobHandler, WorkQueue } from '../infra/bus/port.ts';

/** The most rows one claim takes; a full claim is followed at once by the next. */
export const CLAIM_BATCH = 500;

/**
 * Work whose due time lives in the database, carried on the bus: a loop claims due rows (the
 * claim query decides what is due, and marks rows as on the bus) and publishes one job each;
 * consumers run the handler. On start everything due is claimed whatever its mark, so a restart
 * or a lost job loses no work. Used by webhook delivery and automation runs.
 */
export class DueWork {
  private consumer: Consumer | null = null;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private running: Promise<void> = Promise.resolve();

  constructor(
    private readonly bus: WorkQueue,
    private readonly queue: string,
    private readonly options: { pollMs: number; label: string },
    private readonly claim: (everything: boolean) => Promise<Job[]>,
  ) {}

  async start(handler: JobHandler, consume: ConsumeOptions): Promise<void> {
    this.consumer = await this.bus.consume(this.queue, handler, consume);
    this.running = this.dispatch(true);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
    await this.consumer?.close();
  }

  private async dispatch(everything: boolean): Promise<void> {
    if (this.stopped) return;
    let claimed = 0;
    try {
      const jobs = await this.claim(everything);
      claimed = jobs.length;
      // Publishes wait for the stream's acknowledgement; one after another they added a round trip per job.
      await Promise.all(jobs.map((job) => this.bus.publish(this.queue, job)));
    } catch (error) {
      if (!this.stopped) console.error(`${this.options.label} dispatcher:`, error);
    }
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.dispatch(false);
    }, claimed >= CLAIM_BATCH ? 0 : this.options.pollMs);
  }
}
