import type { RecordedEvent } from './port.ts';

/** An event as the tail keeps it: with the bytes the log stores it in, which bound the tail's memory. */
export interface TailEvent {
  event: RecordedEvent;
  bytes: number;
}

export interface TailSource {
  /** The visible events after `after`, in position order (the store's readAll), with their sizes. */
  read(after: number, limit: number): Promise<TailEvent[]>;
  /** The newest visible position. */
  head(): Promise<number>;
}

const READ_LIMIT = 1000;

/**
 * One reader of the head of the log, shared by every live subscription of a process.
 *
 * Without it each subscription polled the log itself, and every local append woke all of them:
 * a dozen projectors meant a dozen queries per append, most finding nothing visible yet. The
 * tail reads once and keeps the most recent events in memory; a subscription that has caught up
 * takes its batches from there and only reads the table while it is further behind than the
 * memory reaches (its catch-up).
 *
 * The memory holds every visible event in (start, end], with no gap: the tail reads "after end"
 * under the same visibility rule as any reader, and an event at or below a position already read
 * can never become visible later (see postgres-schema.ts). A slice of it is therefore exactly
 * what a subscription's own read would have returned.
 */
export class LogTail {
  private events: RecordedEvent[] = [];
  /** The stored bytes of each of `events`, and their sum. */
  private sizes: number[] = [];
  private bytes = 0;
  private start = -1;
  private end = -1;
  private users = 0;
  private running = false;
  private pending = false;
  /** The highest position this process appended: the tail reads on until it has seen it. */
  private appended = -1;
  private wakeSleeper: () => void = () => {};
  private readonly listeners = new Set<() => void>();
  private readonly aborting = new WeakMap<AbortSignal, Set<() => void>>();
  private readonly errorSinks = new Set<(error: unknown) => void>();

  constructor(
    private readonly source: TailSource,
    private readonly pollMs: number,
    /** Events kept in memory; a subscription further behind reads the table itself. */
    private readonly keep = 20_000,
    /**
     * And at most about this many of their stored bytes: 20,000 imported or arriving messages'
     * events (each with its summary's headers, a few kB) held a server at 90 MB more than its
     * idle size while an import ran (docs/benchmarks.md).
     */
    private readonly keepBytes = 8 * 1024 * 1024,
  ) {}

  /** A subscription starts using the tail; its errors are reported to `onError`. */
  join(onError?: (error: unknown) => void): () => void {
    const sink = onError ?? (() => {});
    this.errorSinks.add(sink);
    this.users++;
    if (!this.running) void this.run();
    return () => {
      this.errorSinks.delete(sink);
      this.users--;
      this.wake();
    };
  }

  /**
   * Something was appended (up to `position`): read again now rather than at the next poll, and
   * keep reading soon until that position is read.
   */
  wake(position = -1): void {
    this.appended = Math.max(this.appended, position);
    this.pending = true;
    this.wakeSleeper();
  }

  /** Up to `limit` events after `position` from memory, or null when memory does not reach back to it. */
  slice(position: number, limit: number): RecordedEvent[] | null {
    if (this.start < 0 || position < this.start) return null;
    if (position >= this.end) return [];
    let low = 0;
    let high = this.events.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (this.events[mid]!.position <= position) low = mid + 1;
      else high = mid;
    }
    return this.events.slice(low, low + limit);
  }

  /** Resolves once the tail has read past `position`, after `ms` at the latest, or on `signal`. */
  waitPast(position: number, ms: number, signal: AbortSignal): Promise<void> {
    if (this.end > position || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const aborting = this.abortingOn(signal);
      const finish = () => {
        clearTimeout(timer);
        this.listeners.delete(onRead);
        aborting.delete(finish);
        resolve();
      };
      const onRead = () => {
        if (this.end > position) finish();
      };
      const timer = setTimeout(finish, ms);
      this.listeners.add(onRead);
      aborting.add(finish);
    });
  }

  /**
   * The waits a signal ends, with one listener on it for all of them: every subscription waits
   * after every batch, and an AbortSignal's addEventListener and removeEventListener at each wait
   * were a third of the tail's CPU.
   */
  private abortingOn(signal: AbortSignal): Set<() => void> {
    let waits = this.aborting.get(signal);
    if (!waits) {
      const set = new Set<() => void>();
      signal.addEventListener(
        'abort',
        () => {
          for (const finish of [...set]) finish();
        },
        { once: true },
      );
      this.aborting.set(signal, set);
      waits = set;
    }
    return waits;
  }

  private async run(): Promise<void> {
    this.running = true;
    // An append of ours is read only once every transaction that began writing before it has
    // ended (the visibility rule of postgres-schema.ts), usually a few ms after its commit: the
    // read right after the commit may miss it. Then the tail reads again after 1 ms, 2, 4, ... up
    // to the poll, rather than after a whole poll, which every write waiting for its read models
    // waited out (half a poll on average, 25 ms by default).
    let soon = 1;
    try {
      while (this.users > 0) {
        this.pending = false;
        try {
          if (this.start < 0) this.start = this.end = await this.source.head();
          const events = await this.source.read(this.end, READ_LIMIT);
          if (events.length > 0) {
            this.remember(events);
            for (const listener of [...this.listeners]) listener();
            if (events.length === READ_LIMIT) continue;
          }
        } catch (error) {
          for (const sink of this.errorSinks) sink(error);
        }
        if (this.pending || this.users === 0) continue;
        const behind = this.end < this.appended;
        const ms = behind ? soon : this.pollMs;
        soon = behind ? Math.min(soon * 2, this.pollMs) : 1;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, ms);
          this.wakeSleeper = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        this.wakeSleeper = () => {};
      }
    } finally {
      this.running = false;
    }
  }

  private remember(events: TailEvent[]): void {
    for (const { event, bytes } of events) {
      this.events.push(event);
      this.sizes.push(bytes);
      this.bytes += bytes;
    }
    this.end = events[events.length - 1]!.event.position;
    // Trimming by half of a bound at a time keeps the copy rare.
    if (this.events.length <= this.keep * 1.5 && this.bytes <= this.keepBytes * 1.5) return;
    let dropped = Math.max(0, this.events.length - this.keep);
    for (let i = 0; i < dropped; i++) this.bytes -= this.sizes[i]!;
    while (this.bytes > this.keepBytes && dropped < this.events.length - 1) this.bytes -= this.sizes[dropped++]!;
    if (dropped === 0) return;
    this.start = this.events[dropped - 1]!.position;
    this.events = this.events.slice(dropped);
    this.sizes = this.sizes.slice(dropped);
  }
}
