import type { ExportCounts, ExportCreator, ExportPhase } from '../../domain/exports/events.ts';
import type { ExportStatus } from '../../domain/exports/state.ts';
import type { Json, NullableTimestamp, Timestamp } from '../projector.ts';

/** The exports read model (projector.ts): each export with its progress and, once ready, its zip. */
export interface ExportsTables {
  exports: {
    workspace_id: string;
    id: string;
    status: ExportStatus;
    phase: ExportPhase;
    created_by: Json<ExportCreator>;
    threads_done: number;
    threads_total: number;
    /** The zip's blob; null until ready, and again once the retention process deleted it. */
    sha256: string | null;
    size_bytes: string | null;
    file_name: string | null;
    counts: Json<ExportCounts> | null;
    error: string | null;
    created_at: Timestamp;
    started_at: NullableTimestamp;
    finished_at: NullableTimestamp;
    expires_at: NullableTimestamp;
  };
}
