import { WrongExpectedRevision, type EventStore, type EventToAppend } from '../infra/eventstore/port.ts';
import type { DomainEvent, EventRegistry } from '../domain/shared/events.ts';
import type { Sanitise } from '../domain/templates/decide.ts';
import { Turns } from './turns.ts';

export interface Aggregate<S, E extends DomainEvent> {
  initialState: S;
  evolve(state: S, event: E): S;
}

/** Who caused a write, recorded in every event's metadata for the audit replay. */
export interface Actor {
  workspaceId: string;
  /**
   * `address`: an address logged in over SMTP submission with one of its app passwords; `person`: a
   * person on our own pages (sign-in, two-factor), with no workspace (`workspaceId` empty).
   */
  kind: 'apiKey' | 'oauth' | 'operator' | 'system' | 'address' | 'person';
  id: string | null;
  requestId?: string;
}

/** Lets a write return only once the read models it touches have seen it (read-your-writes). */
export interface ReadModelBarrier {
  /**
   * Resolves once the read models that handle `eventTypes` have passed `position`. Past its
   * deadline it rejects, unless `onDeadline` answers true: then it waits on, with no deadline.
   */
  waitFor(position: number, eventTypes: readonly string[], wait?: { onDeadline?(): boolean }): Promise<void>;
}

/**
 * Commands of a batch (a page of an import or a broadcast), each without its own wait for the read
 * models: nothing of the batch reads them back, the commands decide from their streams, and a
 * wait per command cost more than the command under load. `settled` waits once for all their
 * writes, however long, so the batch's process never runs more than a batch ahead of the read models.
 */
export function deferredWrites(commands: CommandContext): { commands: CommandContext; settled(): Promise<void> } {
  let last = 0;
  const types = new Set<string>();
  const readModels: ReadModelBarrier = {
    async waitFor(position, eventTypes) {
      last = Math.max(last, position);
      for (const t of eventTypes) types.add(t);
    },
  };
  return {
    commands: { ...commands, readModels },
    settled: () => commands.readModels.waitFor(last, [...types], { onDeadline: () => true }),
  };
}

/**
 * The request a command runs for. When the read models pass their deadline, the request answers
 * at once, saying whether a change of its own is stored by then, and the command goes on to its
 * end in the background (`readModelsLate` answers true); outside a request the wait rejects at the
 * deadline.
 */
export interface RequestWrites {
  /** An append of this request has committed. */
  stored: boolean;
  readModelsLate(): boolean;
}

/**
 * Requests whose handlers are running, by request id (api/ registers each); a command finds its
 * own through its actor's `requestId`. A map rather than an AsyncLocalStorage, which on Node 20
 * costs every promise of the process a hook.
 */
export const requestWrites = new Map<string, RequestWrites>();

/** Read-your-writes: waits for the read models that handle `eventTypes` to pass `position`. */
async function readYourWrites(
  ctx: CommandContext,
  request: RequestWrites | undefined,
  position: number,
  eventTypes: readonly string[],
): Promise<void> {
  await ctx.readModels.waitFor(position, eventTypes, request ? { onDeadline: () => request.readModelsLate() } : {});
}

const requestOf = (actor: Actor): RequestWrites | undefined =>
  actor.requestId === undefined ? undefined : requestWrites.get(actor.requestId);

export interface CommandContext {
  store: EventStore;
  registry: EventRegistry;
  readModels: ReadModelBarrier;
  /** Makes html-engine markup safe to send (the adapter: infra/templates/renderer.ts); templates apply it when they publish. */
  sanitiseHtml: Sanitise;
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

/** Events as the store takes them, with who caused them in their metadata. */
const encoded = (ctx: CommandContext, actor: Actor, events: DomainEvent[]): EventToAppend[] =>
  events.map((e) => ({
    ...ctx.registry.encode(e),
    metadata: {
      workspaceId: actor.workspaceId,
      actor: { kind: actor.kind, id: actor.id },
      requestId: actor.requestId ?? null,
    },
  }));

/**
 * Appends decided events with who caused them in their metadata, and returns once the read models
 * that handle them hold them (read-your-writes): the global position of the last one.
 */
export async function appendDecided<E extends DomainEvent>(
  ctx: CommandContext,
  actor: Actor,
  streamId: string,
  events: E[],
  expected: number | 'no_stream',
  appended?: () => void,
): Promise<number> {
  const { position } = await ctx.store.append(streamId, encoded(ctx, actor, events), expected);
  appended?.();
  const request = requestOf(actor);
  if (request) request.stored = true;
  await readYourWrites(
    ctx,
    request,
    position,
    events.map((e) => e.type),
  );
  return position;
}

/**
 * Load, decide, append with the revision we decided on; on a concurrent write, decide again on
 * the newer state. The decider is pure, so repeating it is safe. Commands of this process take
 * turns on the stream from load to append (commands/turns.ts), so only another process's write
 * can make them decide again: many at once on one registry stream no longer lose to each other
 * until their attempts run out. A decision to write nothing
 * still waits for the read models to hold the state it was made on: the loser of a race answers
 * with what the winner wrote, and a GET right after must see it.
 */
export async function execute<S, E extends DomainEvent>(
  ctx: CommandContext,
  actor: Actor,
  streamId: string,
  aggregate: Aggregate<S, E>,
  decide: (state: S) => E[],
  options: { likelyNew?: boolean } = {},
): Promise<Executed<S, E>> {
  const append = async (
    state: S,
    events: E[],
    expected: number | 'no_stream',
    appended?: () => void,
  ): Promise<Executed<S, E>> => {
    const position = await appendDecided(ctx, actor, streamId, events, expected, appended);
    return { state: events.reduce(aggregate.evolve, state), events, position };
  };
  if (options.likelyNew) {
    // Most such streams do not exist yet: decide on the initial state and append expecting no
    // stream, a round trip less than reading first. A stream that exists fails only this append
    // (the store checks the expectation), and the usual read, decide and append follow.
    const events = decide(aggregate.initialState);
    if (events.length > 0) {
      try {
        return await append(aggregate.initialState, events, 'no_stream');
      } catch (error) {
        if (!(error instanceof WrongExpectedRevision)) throw error;
      }
    }
  }
  for (let attempt = 1; ; attempt++) {
    const endTurn = await turnsOf(ctx.store).take(streamId);
    try {
      const { state, revision, last } = await loadState(ctx, streamId, aggregate);
      const events = decide(state);
      if (events.length === 0) {
        endTurn();
        if (last) await readYourWrites(ctx, requestOf(actor), last.position, [last.type]);
        return { state, events, position: null };
      }
      return await append(state, events, revision < 0 ? 'no_stream' : revision, endTurn);
    } catch (error) {
      if (error instanceof WrongExpectedRevision && attempt < MAX_ATTEMPTS) continue;
      throw error;
    } finally {
      endTurn();
    }
  }
}

/** One command of `executeNew`: its stream and its decision. */
export interface NewStreamCommand<S, E> {
  streamId: string;
  decide(state: S): E[];
}

/**
 * Commands each on a stream of its own, most of them new (a page of an import): each is decided
 * on the initial state and all of them are appended in one `appendMany` expecting no stream, a
 * page's appends in one call where one by one they took about ten. A command whose stream exists
 * (the store refuses that append alone), or that decides nothing on the initial state, then runs
 * as `execute` runs it, on the stream as stored. Answers each command's outcome in their order,
 * a refused one as its error; the read models are waited for once, for all of them.
 */
export async function executeNew<S, E extends DomainEvent>(
  ctx: CommandContext,
  actor: Actor,
  aggregate: Aggregate<S, E>,
  commands: readonly NewStreamCommand<S, E>[],
): Promise<PromiseSettledResult<Executed<S, E>>[]> {
  const outcomes: (PromiseSettledResult<Executed<S, E>> | null)[] = commands.map(() => null);
  const decided: { index: number; events: E[] }[] = [];
  commands.forEach((c, index) => {
    try {
      const events = c.decide(aggregate.initialState);
      if (events.length > 0) decided.push({ index, events });
    } catch (reason) {
      outcomes[index] = { status: 'rejected', reason };
    }
  });
  const appended = await ctx.store.appendMany(
    decided.map(({ index, events }) => ({
      streamId: commands[index]!.streamId,
      events: encoded(ctx, actor, events),
      expected: 'no_stream' as const,
    })),
  );
  let last = 0;
  const types = new Set<string>();
  appended.forEach((result, i) => {
    const { index, events } = decided[i]!;
    if (result.status === 'fulfilled') {
      last = Math.max(last, result.value.position);
      for (const e of events) types.add(e.type);
      const state = events.reduce(aggregate.evolve, aggregate.initialState);
      outcomes[index] = { status: 'fulfilled', value: { state, events, position: result.value.position } };
    } else if (!(result.reason instanceof WrongExpectedRevision)) outcomes[index] = result;
  });
  const request = requestOf(actor);
  if (request && last > 0) request.stored = true;
  const rest = await Promise.allSettled(
    commands.map((c, index) =>
      outcomes[index] === null ? execute(ctx, actor, c.streamId, aggregate, c.decide) : null,
    ),
  );
  if (last > 0) await readYourWrites(ctx, request, last, [...types]);
  return rest.map((r, index) => outcomes[index] ?? (r as PromiseSettledResult<Executed<S, E>>));
}

/** Per event store, so several systems in one process (tests, benches) contend like processes. */
const turns = new WeakMap<EventStore, Turns>();
function turnsOf(store: EventStore): Turns {
  let t = turns.get(store);
  if (!t) {
    t = new Turns();
    turns.set(store, t);
  }
  return t;
}
