import type { ColumnType, Kysely, RawBuilder } from 'kysely';
import type { EventOfType, EventType } from '../domain/registry.ts';
import type { DomainEvent } from '../domain/shared/events.ts';
import type { EventInPlace } from '../infra/eventstore/port.ts';

/** What commands/execute.ts writes beside every event: the workspace whose stream holds it, and who caused it. */
export interface EventMetadata {
  workspaceId: string;
  [key: string]: unknown;
}

/** Where an event sits in the log and whose it is, beside its type and data. */
export interface Envelope {
  streamId: string;
  revision: number;
  position: number;
  recordedAt: Date;
  metadata: EventMetadata;
}

/** An event as the runner hands it over: decoded (upcast and validated) and in its envelope. */
export type ProjectedEvent = DomainEvent & Envelope;

/** A typed event of the given type(s), in its envelope. */
export type Projected<T extends EventType> = EventOfType<T> & Envelope;

/** timestamptz: read as a Date; written as the ISO text events carry, or a Date. */
export type Timestamp = ColumnType<Date, string | Date, string | Date>;
export type NullableTimestamp = ColumnType<Date | null, string | Date | null, string | Date | null>;
/** jsonb: read parsed; written as JSON text. */
export type Json<T> = ColumnType<T, string, string>;

/** How one event type changes the tables of `DB`. Must be idempotent: the runner may hand it over again after a crash. */
export type Applier<DB, T extends EventType> = (db: Kysely<DB>, event: Projected<T>) => Promise<void>;

/** One applier per event type handled; a key that names no event type is a compile error. */
export type Appliers<DB, O> = { [T in keyof O]: T extends EventType ? Applier<DB, T> : never };

/** The event types an appliers object declares. */
type Handled<O> = Extract<keyof O, EventType>;

/**
 * How a rebuild replays the log into fresh tables when the projector offers it and the store
 * holds the log in the same database (`EventStore.eventsInPlace`): set-based SQL over the events
 * where they lie, so none is read out, decoded and written back. Tables from `ddl` (the
 * projector's tables without their keys, and any scratch tables the load needs); `prepare` once
 * over each stretch of the log up to the live checkpoint, then `load` over each stretch, two
 * stretches at a time; `keys` built beside the projector's `indexes`, then `finish`. It leaves the
 * tables exactly as `ddl` and `applyBatch` would have; `applyBatch` takes over for the events
 * after that. Statements name the tables unqualified (the scratch schema is first on the path).
 */
export interface BulkLoad {
  /**
   * The stored version of each event type the statements read. A log holding another version of
   * one of them (an older shape, upcast on read) is replayed through `applyBatch` instead.
   */
  versions: Partial<Record<EventType, number>>;
  ddl(schema: string): string;
  /** What `load` needs of the whole log first (removals an add must know of, say). */
  prepare?(events: RawBuilder<EventInPlace>): RawBuilder<unknown>;
  load(events: RawBuilder<EventInPlace>): RawBuilder<unknown>;
  /** Unique indexes the keys will use, built with `indexes`; statements as `indexes` has them. */
  keys(schema: string): string;
  finish(schema: string): string;
}

/** The tables a model owns and how to create them in a given schema (the live one is `public`). */
interface Owned<DB> {
  name: string;
  /** Bump when the tables or what is written to them change (see each kind for what follows). */
  version: number;
  tables: readonly (keyof DB & string)[];
  ddl(schema: string): string;
}

export interface ProjectorSpec<DB, O> extends Owned<DB> {
  /**
   * Secondary indexes, kept apart from `ddl` so a rebuild loads its rows first and builds these
   * once at the end, which is several times cheaper than maintaining them row by row. Statements
   * end with a `;` at the end of a line; a rebuild builds them two at a time.
   */
  indexes?(schema: string): string;
  /** What each event type does to the tables; the types named here are the ones the projector handles. */
  on: O & Appliers<DB, O>;
  /** Optional: the same as the appliers on each event in order, in fewer round trips. */
  applyBatch?(db: Kysely<DB>, events: Projected<Handled<O>>[]): Promise<void>;
  /**
   * Optional, instead of `applyBatch`: for a hot event type, what a run of its events in a row
   * does at once (the same as its applier on each); other events apply alone, in their place.
   */
  onRun?: { [T in Handled<O>]?: (db: Kysely<DB>, events: Projected<T>[]) => Promise<void> };
  /** Optional: a faster replay for rebuilds than `applyBatch`. */
  bulkLoad?: BulkLoad;
  /**
   * Optional: whether an event of a handled type changes the tables (an arrival with attachments,
   * say). Following the log, a batch of only events it answers false for opens no transaction:
   * its checkpoint is moved on its own, at once, since writes in other processes wait on it.
   * Rebuilds hand every event to `applyBatch`.
   */
  writes?(event: Projected<Handled<O>>): boolean;
  /**
   * Optional: its appliers and `applyBatch` only write, and read nothing back (no rows, no counts
   * of rows changed). Following the log, a batch's statements are then recorded and sent with
   * the checkpoint's move as one transaction in one round trip (projections/pipeline.ts), which
   * is what a write waiting for this read model waits for.
   */
  pipelined?: boolean;
}

/**
 * One read model, as the runner and a rebuild see it: rebuildable from position 0, and rebuilt
 * from there by the runner when its `version` changes. Made by `defineProjector`.
 */
export interface Projector {
  kind: 'projector';
  name: string;
  version: number;
  tables: readonly string[];
  ddl(schema: string): string;
  indexes?(schema: string): string;
  /** Derived from the appliers: the event types whose events reach `apply` and `applyBatch`. */
  handles: readonly EventType[];
  /** One event, by its type's applier. */
  apply(db: Kysely<unknown>, event: ProjectedEvent): Promise<void>;
  /** Events in order: the projector's `applyBatch` when it has one, else `apply` on each. */
  applyBatch(db: Kysely<unknown>, events: ProjectedEvent[]): Promise<void>;
  bulkLoad?: BulkLoad;
  /** Whether the event changes the tables (`ProjectorSpec.writes`); absent: every event handled may. */
  writes?(event: ProjectedEvent): boolean;
  /** `ProjectorSpec.pipelined`. */
  pipelined?: boolean;
}

/**
 * A read model over the tables `DB` (curried so `DB` is named and the appliers' types inferred):
 * `defineProjector<SuppressionsTables>()({ name, version, tables, ddl, on: { SuppressionAdded: add, ... } })`.
 *
 * The runner hands a projector only events of the types it handles, decoded by the registry (so
 * their data has the definition's shape), in a transaction on the database that holds its tables:
 * here, and in `defineReactor`, is where those types are asserted rather than checked.
 */
export function defineProjector<DB>() {
  return <O extends object>(spec: ProjectorSpec<DB, O>): Projector => {
    const handles = Object.keys(spec.on) as Handled<O>[];
    const on: Partial<Record<string, Applier<DB, Handled<O>>>> = spec.on;
    const apply = (db: Kysely<unknown>, event: ProjectedEvent) => {
      const applier = on[event.type];
      if (!applier) throw new Error(`projector ${spec.name} handles no ${event.type}`);
      return applier(db as Kysely<DB>, event as Projected<Handled<O>>);
    };
    return {
      kind: 'projector',
      name: spec.name,
      version: spec.version,
      tables: spec.tables,
      ddl: spec.ddl,
      indexes: spec.indexes,
      handles,
      apply,
      applyBatch: async (db, events) => {
        if (spec.applyBatch) return spec.applyBatch(db as Kysely<DB>, events as Projected<Handled<O>>[]);
        const runs = (spec.onRun ?? {}) as Partial<
          Record<string, (db: Kysely<DB>, events: ProjectedEvent[]) => Promise<void>>
        >;
        for (let i = 0; i < events.length; ) {
          const type = events[i]!.type;
          const run = runs[type];
          let end = i + 1;
          if (run) while (end < events.length && events[end]!.type === type) end++;
          await (run ? run(db as Kysely<DB>, events.slice(i, end)) : apply(db, events[i]!));
          i = end;
        }
      },
      bulkLoad: spec.bulkLoad,
      writes: spec.writes as ((event: ProjectedEvent) => boolean) | undefined,
      pipelined: spec.pipelined,
    };
  };
}

export interface ReactorSpec<DB, R extends EventType> extends Owned<DB> {
  /** The event types it reacts to. */
  reactsTo: readonly R[];
  /** Reacts to a batch of them, in log order, in the transaction that moves its checkpoint. */
  react(db: Kysely<DB>, events: Projected<R>[]): Promise<void>;
  /**
   * Optional: whether reacting to the batch would write nothing, told from the reactor's own
   * tables before any transaction (only it writes what this reads, in log order, so they stand as
   * the batch's events find them). True: the runner moves the checkpoint on its own, without the
   * transaction (begin, checkpoint, commit) that every write waiting for it would wait on.
   */
  quiet?(db: Kysely<DB>, events: Projected<R>[]): Promise<boolean>;
  /**
   * Optional: the event types whose writes wait for it (read-your-writes on its tables); absent:
   * all it reacts to. A reactor whose work on the others is of its own time (a webhook's fan-out)
   * names the rest, so a write of those answers without waiting for it.
   */
  awaitedFor?: readonly R[];
}

/**
 * A process manager that follows the log like a projector (one leader, its checkpoint moved in
 * the same transaction as what it writes, read-your-writes for the commands that wait on it) but
 * whose tables are the state of work done outside: sent webhooks, enrolled runs. It is never
 * rebuilt, since replaying the log would do that work again; a new `version` only runs its `ddl`,
 * which migrates its tables forward. Made by `defineReactor`.
 */
export interface Reactor {
  kind: 'reactor';
  name: string;
  version: number;
  tables: readonly string[];
  ddl(schema: string): string;
  handles: readonly EventType[];
  applyBatch(db: Kysely<unknown>, events: ProjectedEvent[]): Promise<void>;
  /** `ReactorSpec.quiet`. */
  quiet?(db: Kysely<unknown>, events: ProjectedEvent[]): Promise<boolean>;
  /** `ReactorSpec.awaitedFor`. */
  awaitedFor?: readonly EventType[];
}

/** `defineReactor<DispatchTables>()({ name, version, tables, ddl, reactsTo: [...], react })`. */
export function defineReactor<DB>() {
  return <R extends EventType>(spec: ReactorSpec<DB, R>): Reactor => ({
    kind: 'reactor',
    name: spec.name,
    version: spec.version,
    tables: spec.tables,
    ddl: spec.ddl,
    handles: spec.reactsTo,
    applyBatch: (db, events) => spec.react(db as Kysely<DB>, events as Projected<R>[]),
    quiet: spec.quiet && ((db, events) => spec.quiet!(db as Kysely<DB>, events as Projected<R>[])),
    awaitedFor: spec.awaitedFor,
  });
}

/** Either kind of log follower the runner runs. */
export type Follower = Projector | Reactor;
