/**
 * A background loop of a process: runs `tick`, then runs it again after the delay `tick` answers,
 * until stopped. A failed tick is logged under `label` and the loop goes on after `afterErrorMs`.
 * `stop` waits for a tick in progress, so nothing of the loop outlives it.
 */
export class Repeating {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> = Promise.resolve();
  private stopped = false;

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

  private schedule(ms: number): void {
    this.timer = setTimeout(() => {
      this.running = this.run();
    }, ms);
  }

  private async run(): Promise<void> {
    let next = this.afterErrorMs;
    try {
      next = await this.tick();
    } catch (error) {
      if (!this.stopped) console.error(`${this.label}:`, error);
    }
    if (!this.stopped) this.schedule(next);
  }
}
