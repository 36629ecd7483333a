/** While a tick keeps failing, it is logged at most this often, and retried at most this far apart. */
const LOG_FAILURES_EVERY_MS = 10_000;
const MAX_BACKOFF_MS = 1000;

/**
 * A background loop of a process: runs `tick`, then runs it again after the delay `tick` answers,
 * until stopped. A failed tick is logged under `label` and the loop goes on after `afterErrorMs`,
 * doubled after each further failure up to a second (or `afterErrorMs` when longer): a database
 * away for a restart is not asked twenty times a second, nor logged each time.
 * `stop` waits for a tick in progress, so nothing of the loop outlives it.
 */
export class Repeating {
  private timer: NodeJS.Timeout | null = null;
  /** When the timer fires (epoch ms); meaningful while `timer` is set. */
  private plannedAt = 0;
  /** A wake that came while a tick ran: the delay it asked for. */
  private woken: number | null = null;
  private running: Promise<void> = Promise.resolve();
  private stopped = false;
  private failures = 0;
  private loggedAt = 0;

  constructor(
    private readonly label: string,
    private readonly tick: () => Promise<number>,
    private readonly afterErrorMs: number,
  ) {}

  start(firstInMs = 0): void {
    this.schedule(firstInMs);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }

  /**
   * Runs the tick within `ms` when it was planned for later; a tick under way is followed by one
   * within `ms` of its end. Never runs two ticks at once.
   */
  wake(ms = 0): void {
    if (this.stopped) return;
    if (this.timer === null) {
      this.woken = Math.min(this.woken ?? ms, ms);
      return;
    }
    if (Date.now() + ms >= this.plannedAt) return;
    clearTimeout(this.timer);
    this.schedule(ms);
  }

  private schedule(ms: number): void {
    this.plannedAt = Date.now() + ms;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.running = this.run();
    }, ms);
  }

  private async run(): Promise<void> {
    let next: number;
    try {
      next = await this.tick();
      this.failures = 0;
      this.loggedAt = 0;
    } catch (error) {
      next = Math.min(this.afterErrorMs * 2 ** this.failures, Math.max(this.afterErrorMs, MAX_BACKOFF_MS));
      this.failures++;
      if (!this.stopped && Date.now() - this.loggedAt >= LOG_FAILURES_EVERY_MS) {
        this.loggedAt = Date.now();
        console.error(`${this.label}:`, error);
      }
    }
    if (this.woken !== null) next = Math.min(next, this.woken);
    this.woken = null;
    if (!this.stopped) this.schedule(next);
  }
}
