import type { Generated } from 'kysely';
import type { ImportReport, ImportResource, ProviderName } from '../../domain/provider-imports/providers.ts';
import type { Json, NullableTimestamp, Timestamp } from '../../projections/projector.ts';

/** The work of provider imports (schedule.ts makes the runs, worker.ts pages through the provider). */
export interface ProviderImportWorkTables {
  provider_import_runs: {
    id: string;
    workspace_id: string;
    provider: ProviderName;
    resources: ImportResource[];
    /** `queued`: not started; `running`: paging; `done`: nothing more to do. */
    status: 'queued' | 'running' | 'done';
    /** Which of `resources` is under way. */
    stage: Generated<number>;
    /** The provider's cursor of the next page of that resource (the adapter's own text); null: its first. */
    cursor: string | null;
    /** The report so far, as of the last page applied: the checkpoint's other half. */
    report: Json<ImportReport>;
    /** Failed attempts at the current page in a row (5xx, no answer), and 429s in a row. */
    attempts: Generated<number>;
    due_at: Timestamp;
    enqueued_at: NullableTimestamp;
    /** Counts the run's steps, so a duplicate job of a step taken already is a no-op. */
    seq: Generated<number>;
  };
  /**
   * Which resource of ours each provider row became: a re-run maps the same source id to the
   * same resource. `import_id` is the import that claimed it; `target_id` is null until the
   * resource is made (a page a crash cut is made again through the commands' natural keys).
   */
  provider_import_sources: {
    workspace_id: string;
    provider: ProviderName;
    resource: ImportResource;
    source_id: string;
    import_id: string;
    target_id: string | null;
    /**
     * The last import that counted this row of an earlier import as `existing` (or unsubscribed),
     * set with that import's checkpoint: a later page, or a second list holding the same person,
     * does not count it twice, and a page a crash cut counts it again.
     */
    seen_by: string | null;
  };
}
