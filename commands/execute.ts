import { WrongExpectedRevision, type EventStore } from '../infra/eventstore/port.ts';
import type { DomainEvent, EventRegistry } from '../domain/shared/events.ts';

export interface Aggregate<S, E extends DomainEvent> {
  initialState: S;
  evolve(state: S, event: E): S;
}

/** Who caused a write, recorded in every event's metadata for the audit replay. */
export interface Actor {
  workspaceId: string;
  kind: 'apiKey' | 'oauth' | 'operator' | 'system';
  id: string | null;
  requestId?: string;
}

/** Lets a write return only once the read models it touches have seen it (read-your-writes). */
export interface ReadModelBarrier {
  waitFor(position: number, eventTypes: readonly string[]): Promise<void>;
}

export interface CommandContext {
  store: EventStore;
  registry: EventRegistry;
  readModels: ReadModelBarrier;
}

export interface Executed<S, E> {
  state: S;
  events: E[];
  /** Global position of the last event written; null when the decider wrote nothing. */
  position: number | null;
}

const MAX_ATTEMPTS = 20;

export async function loadState<S, E extends DomainEvent>(
  ctx: CommandContext,
  streamId: string,
  aggregate: Aggregate<S, E>,
): Promise<{ state: S; revision: number; last: { position: number; type: string } | undefined }> {
  const recorded = await ctx.store.readStream(streamId);
  let state = aggregate.initialState;
  for (const r of recorded) state = aggregate.evolve(state, ctx.registry.decode(r.type, r.version, r.data) as E);
  return { state, revision: recorded.length - 1, last: recorded.at(-1) };
}

/**
 * Load, decide, append with the revision we decided on; on a concurrent write, decide again on
 * the newer state. The decider is pure, so repeating it is safe. A decision to write nothing
 * still waits for the read models to hold the state it was made on: the loser of a race answers
 * with what the winner wrote, and a GET right after must see it.
 */
export async function execute<S, E extends DomainEvent>(
  ctx: CommandContext,
  actor: Actor,
  streamId: string,
  aggregate: Aggregate<S, E>,
  decide: (state: S) => E[],
): Promise<Executed<S, E>> {
  for (let attempt = 1; ; attempt++) {
    const { state, revision, last } = await loadState(ctx, streamId, aggregate);
    const events = decide(state);
    if (events.length === 0) {
      if (last) await ctx.readModels.waitFor(last.position, [last.type]);
      return { state, events, position: null };
    }
    const encoded = events.map((e) => ({
      ...ctx.registry.encode(e),
      metadata: { workspaceId: actor.workspaceId, actor: { kind: actor.kind, id: actor.id }, requestId: actor.requestId ?? null },
    }));
    try {
      const result = await ctx.store.append(streamId, encoded, revision < 0 ? 'no_stream' : revision);
      await ctx.readModels.waitFor(result.position, events.map((e) => e.type));
      return { state: events.reduce(aggregate.evolve, state), events, position: result.position };
    } catch (error) {
      if (error instanceof WrongExpectedRevision && attempt < MAX_ATTEMPTS) continue;
      throw error;
    }
  }
}
