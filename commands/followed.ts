import type { DomainEvent } from '../domain/shared/events.ts';
import type { EventStore } from '../infra/eventstore/port.ts';
import type { Aggregate, CommandContext } from './execute.ts';

/** Streams followed per event store; past this many, the longest unused is forgotten (and read whole again if asked). */
const MAX_FOLLOWED = 10_000;

interface Followed<S> {
  state: S;
  revision: number;
  waiting: { resolve(state: S): void; reject(error: unknown): void }[];
  reading: boolean;
}

/** Per event store, so several systems in one process (tests, benches) follow like separate processes. */
const followed = new WeakMap<EventStore, Map<string, Followed<unknown>>>();

/**
 * The current state of a small stream that every request of a kind checks and few write (a
 * workspace's sending lanes, checked by each send): folded once per process, then brought up to
 * date by reading only what was appended since, one read shared by the checks waiting together.
 * A check never joins a read already under way: its read starts after it asked, so it sees every
 * event appended before (a pause is seen by the very next send, as with a whole read).
 */
export function currentState<S, E extends DomainEvent>(
  ctx: CommandContext,
  streamId: string,
  aggregate: Aggregate<S, E>,
): Promise<S> {
  let byStream = followed.get(ctx.store);
  if (!byStream) {
    byStream = new Map();
    followed.set(ctx.store, byStream);
  }
  let entry = byStream.get(streamId) as Followed<S> | undefined;
  if (entry) byStream.delete(streamId);
  else entry = { state: aggregate.initialState, revision: -1, waiting: [], reading: false };
  // Re-inserted last: the map's order is the order of use, its first key the longest unused.
  byStream.set(streamId, entry as Followed<unknown>);
  if (byStream.size > MAX_FOLLOWED) {
    const [oldest, value] = byStream.entries().next().value!;
    if (!value.reading) byStream.delete(oldest);
  }
  const current = entry;
  return new Promise<S>((resolve, reject) => {
    current.waiting.push({ resolve, reject });
    if (!current.reading) void catchUp(ctx, streamId, aggregate, current);
  });
}

async function catchUp<S, E extends DomainEvent>(
  ctx: CommandContext,
  streamId: string,
  aggregate: Aggregate<S, E>,
  entry: Followed<S>,
): Promise<void> {
  entry.reading = true;
  try {
    while (entry.waiting.length > 0) {
      const waiters = entry.waiting.splice(0);
      try {
        for (const r of await ctx.store.readStream(streamId, entry.revision + 1)) {
          entry.state = aggregate.evolve(entry.state, ctx.registry.decode(r.type, r.version, r.data) as E);
          entry.revision = r.revision;
        }
        for (const w of waiters) w.resolve(entry.state);
      } catch (error) {
        for (const w of waiters) w.reject(error);
      }
    }
  } finally {
    entry.reading = false;
  }
}
