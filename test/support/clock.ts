/**
 * Waits out the end of a clock minute, so that requests made next share one rate-limit window: for
 * windows kept on real time (contact events' allowance takes the request's own time).
 */
export async function awayFromMinuteEnd(seconds = 20): Promise<void> {
  const intoMinute = (Date.now() % 60_000) / 1000;
  if (intoMinute > 60 - seconds) await new Promise((r) => setTimeout(r, (60 - intoMinute + 0.2) * 1000));
}

/**
 * The rate limiter's clock for a test (`SystemOptions.rateLimitNow`): real time, moved on to the
 * next clock minute when requests made next must share one window, where `awayFromMinuteEnd`
 * waited up to 20 s for that minute to come.
 */
export class RateLimitClock {
  #skewMs = 0;

  readonly now = (): number => Date.now() + this.#skewMs;

  /** The window requests count in now, as `rate_limit_windows.window_start` names it. */
  windowStart(): number {
    return Math.floor(this.now() / 60_000) * 60_000;
  }

  /** Moves the clock on by `ms`, as waiting that long would for the admission (a key's expiry). */
  advance(ms: number): void {
    this.#skewMs += ms;
  }

  /** Past the end of the minute when it is less than `seconds` away, so the requests made next share one window. */
  awayFromMinuteEnd(seconds = 20): void {
    const intoMinute = (this.now() % 60_000) / 1000;
    if (intoMinute > 60 - seconds) this.#skewMs += (60 - intoMinute + 0.2) * 1000;
  }
}
