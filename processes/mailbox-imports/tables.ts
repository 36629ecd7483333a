import type { Generated } from 'kysely';
import type { ImportFile, ImportOptions, ImportProgress } from '../../domain/mailbox-imports/events.ts';
import type { Mailbox } from '../../domain/threads/events.ts';
import type { Json, NullableTimestamp, Timestamp } from '../../projections/projector.ts';

/** The work of mailbox imports (schedule.ts makes the runs, worker.ts reads the files). */
export interface MailboxImportWorkTables {
  mailbox_import_runs: {
    id: string;
    workspace_id: string;
    mailbox: Json<Mailbox>;
    files: Json<ImportFile[]>;
    chunk_bytes: string;
    options: Json<ImportOptions>;
    formats: string[];
    /** `uploading`: not started; `queued`; `running`: reading; `done`: nothing more to do. */
    status: 'uploading' | 'queued' | 'running' | 'done';
    /** The checkpoint: the file under way, the byte its next message starts at, messages seen before it. */
    file: Generated<number>;
    at_byte: Generated<string>;
    /** In an archive: the path of the member under way (its entry, then its entry in an inner archive). */
    entry: Generated<number[]>;
    ordinal: Generated<number>;
    progress: Json<ImportProgress>;
    /** Label names skipped (lower case), so each counts once in `labelsSkipped`. */
    labels_skipped: Generated<string[]>;
    due_at: Timestamp;
    enqueued_at: NullableTimestamp;
    seq: Generated<number>;
  };
  /**
   * The dedupe keys (Message-ID and content hash) of the messages imported into each mailbox,
   * across imports. `import_id` and `ordinal` say which message of which import claimed it, so a
   * resumed run knows its own claims from duplicates.
   */
  mailbox_import_keys: {
    workspace_id: string;
    address: string;
    key: string;
    import_id: string;
    ordinal: number;
  };
}
