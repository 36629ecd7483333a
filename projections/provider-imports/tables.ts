import type { ImportReport, ImportResource, ProviderName } from '../../domain/provider-imports/providers.ts';
import type { ProviderImportStatus } from '../../domain/provider-imports/state.ts';
import type { Json, NullableTimestamp, Timestamp } from '../projector.ts';

/** The provider imports read model (projector.ts): each import with its latest report. */
export interface ProviderImportsTables {
  provider_imports: {
    workspace_id: string;
    id: string;
    provider: ProviderName;
    status: ProviderImportStatus;
    resources: ImportResource[];
    /** Null until the first resource is done. */
    report: Json<Partial<ImportReport> | null>;
    last_error: string | null;
    created_at: Timestamp;
    started_at: NullableTimestamp;
    finished_at: NullableTimestamp;
  };
}
