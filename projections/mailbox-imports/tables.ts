import type { ImportFile, ImportOptions, ImportProgress } from '../../domain/mailbox-imports/events.ts';
import type { MailboxImportStatus } from '../../domain/mailbox-imports/state.ts';
import type { Json, NullableTimestamp, Timestamp } from '../projector.ts';

/** The mailbox imports read model (projector.ts): each import with its progress. */
export interface MailboxImportsTables {
  mailbox_imports: {
    workspace_id: string;
    id: string;
    address_id: string | null;
    address: string;
    domain: string;
    status: MailboxImportStatus;
    options: Json<ImportOptions>;
    files: Json<ImportFile[]>;
    formats: string[];
    chunk_bytes: string;
    total_bytes: string;
    progress: Json<ImportProgress>;
    last_error: string | null;
    upload_deleted: boolean;
    created_at: Timestamp;
    started_at: NullableTimestamp;
    finished_at: NullableTimestamp;
  };
}
