import type { Kysely, Transaction } from 'kysely';
import type { DomainEvent } from '../domain/shared/events.ts';

export interface ProjectedEvent extends DomainEvent {
  streamId: string;
  revision: number;
  position: number;
  recordedAt: Date;
  metadata: Record<string, unknown>;
}

/**
 * One read model: the tables it owns, how to create them in a given schema (the live one is
 * `public`; a rebuild builds in a scratch schema and swaps), and how an event changes them.
 * `apply` must be idempotent per event; the runner commits it with the checkpoint.
 */
export interface Projector {
  name: string;
  /** Bump when the tables or the apply logic change: the runner rebuilds it from position 0. */
  version: number;
  /**
   * false for a process manager that follows the log like a projector but whose tables are the
   * state of work done outside (sent webhooks): it is never rebuilt, only migrated forward.
   */
  rebuildable?: false;
  tables: readonly string[];
  ddl(schema: string): string;
  /**
   * Secondary indexes, kept apart from `ddl` so a rebuild loads its rows first and builds these
   * once at the end, which is several times cheaper than maintaining them row by row. Statements
   * end with a `;` at the end of a line; a rebuild builds them two at a time.
   */
  indexes?(schema: string): string;
  /** Optional: a faster replay for rebuilds than `applyBatch` (a fresh one per rebuild). */
  bulkLoad?(): BulkLoad;
  handles: readonly string[];
  apply(db: Transaction<any> | Kysely<any>, event: ProjectedEvent): Promise<void>;
  /** Optional: the same as `apply` on each event in order, in fewer round trips. */
  applyBatch?(db: Transaction<any> | Kysely<any>, events: ProjectedEvent[]): Promise<void>;
}

/**
 * How a rebuild replays the log into fresh tables when the projector offers it: tables from
 * `ddl` (the projector's tables without their keys, and any scratch tables the load needs), every
 * event up to the live checkpoint passed to `load` once, in order, batch after batch, then
 * `finish` once before the projector's `indexes`. It leaves the tables exactly as `ddl` and
 * `applyBatch` would have; `applyBatch` takes over for the events after that.
 */
export interface BulkLoad {
  ddl(schema: string): string;
  load(db: Transaction<any> | Kysely<any>, events: ProjectedEvent[]): Promise<void>;
  finish(schema: string): string;
}
