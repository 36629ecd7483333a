import { decideReserveSends, monthOf, secondsToNextMonth } from '../../domain/email-quotas/decide.ts';
import { emailQuotaStream, type EmailQuotaEvent } from '../../domain/email-quotas/events.ts';
import { DomainError } from '../../domain/shared/errors.ts';
import { WrongExpectedRevision, type EventStore } from '../../infra/eventstore/port.ts';
import { appendDecided, type CommandContext } from '../execute.ts';

/** 429 `send_quota_exceeded`: the month's allowance is used up; it starts again in `retryAfterSeconds`. */
export class SendQuotaExceeded extends DomainError {
  constructor(
    readonly allowance: number,
    override readonly retryAfterSeconds: number,
  ) {
    super(
      'send_quota_exceeded',
      `The workspace has sent its ${allowance} messages of this month; the allowance starts again on the first of next month (00:00 UTC).`,
    );
  }
}

interface Waiter {
  now: string;
  resolve(granted: boolean): void;
  reject(error: unknown): void;
}

/** One quota stream as this process knows it: the last event read, and the sends waiting for a reservation. */
interface Queue {
  /** Whether `revision` and `used` come from a read of the stream (else nothing is known yet). */
  read: boolean;
  revision: number;
  used: number;
  waiting: Waiter[];
  flushing: boolean;
}

const MAX_ATTEMPTS = 50;

/**
 * Reserves one live send of the month for a workspace, or refuses with `SendQuotaExceeded`.
 *
 * Exact under concurrency: every reservation is appended to the month's stream with the revision
 * read, so two processes cannot both take the last unit. Cheap under concurrency: the sends of
 * this process waiting on one stream are granted together, in one event (a group commit), so a
 * batch of 100 costs one append, not 100 in a row. The stream is followed from the revision this
 * process last saw, and its events carry the running total: once this process has read the
 * stream, a reservation appends on the revision it knows without reading first, and reads only
 * what another process wrote since when that append finds the stream moved on. A count this
 * process knows is never above the true one (reservations only add), so a refusal it decides on
 * is one the true count would decide too.
 */
export function reserveSend(ctx: CommandContext, workspaceId: string, allowance: number, now: string): Promise<void> {
  const stream = emailQuotaStream(workspaceId, monthOf(now));
  const queue = queueOf(ctx.store, stream);
  return new Promise<boolean>((resolve, reject) => {
    queue.waiting.push({ now, resolve, reject });
    if (!queue.flushing) void flush(ctx, workspaceId, stream, queue, allowance);
  }).then((granted) => {
    if (!granted) throw new SendQuotaExceeded(allowance, secondsToNextMonth(now));
  });
}

async function flush(ctx: CommandContext, workspaceId: string, stream: string, queue: Queue, allowance: number) {
  queue.flushing = true;
  try {
    while (queue.waiting.length > 0) {
      const waiters = queue.waiting.splice(0);
      try {
        const granted = await reserve(ctx, workspaceId, stream, queue, waiters.length, allowance, waiters.at(-1)!.now);
        for (const [i, w] of waiters.entries()) w.resolve(i < granted);
      } catch (error) {
        for (const w of waiters) w.reject(error);
      }
    }
  } finally {
    queue.flushing = false;
  }
}

async function reserve(
  ctx: CommandContext,
  workspaceId: string,
  stream: string,
  queue: Queue,
  wanted: number,
  allowance: number,
  now: string,
): Promise<number> {
  // A stream this process has not read yet may hold another process's reservations: read first.
  let stale = !queue.read;
  for (let attempt = 1; ; attempt++) {
    if (stale) {
      for (const r of await ctx.store.readStream(stream, queue.revision + 1)) {
        const event = ctx.registry.decode(r.type, r.version, r.data) as EmailQuotaEvent;
        queue.revision = r.revision;
        queue.used = event.data.used;
      }
      queue.read = true;
    }
    stale = true;
    const events = decideReserveSends({ used: queue.used }, { month: monthOf(now), wanted, allowance, now });
    const reserved = events[0];
    if (!reserved) return 0;
    try {
      // The system reserves, whichever requests it groups: their own events name their actors.
      await appendDecided(
        ctx,
        { workspaceId, kind: 'system', id: null },
        stream,
        events,
        queue.revision < 0 ? 'no_stream' : queue.revision,
      );
      queue.revision += 1;
      queue.used = reserved.data.used;
      return reserved.data.count;
    } catch (error) {
      if (!(error instanceof WrongExpectedRevision) || attempt >= MAX_ATTEMPTS) throw error;
    }
  }
}

/** Per event store, so several systems in one process (tests, benches) count like separate processes. */
const queues = new WeakMap<EventStore, Map<string, Queue>>();
function queueOf(store: EventStore, stream: string): Queue {
  let byStream = queues.get(store);
  if (!byStream) {
    byStream = new Map();
    queues.set(store, byStream);
  }
  let queue = byStream.get(stream);
  if (!queue) {
    queue = { read: false, revision: -1, used: 0, waiting: [], flushing: false };
    byStream.set(stream, queue);
  }
  return queue;
}
