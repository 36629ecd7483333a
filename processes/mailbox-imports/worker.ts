import { createHash } from 'node:crypto';
import type pg from 'pg';
import { type Actor, type CommandContext, deferredWrites } from '../../commands/execute.ts';
import { ImportLabels } from '../../commands/mailbox-imports/labels.ts';
import {
  beginMailboxImport,
  cancelMailboxImport,
  deleteImportUpload,
  finishMailboxImport,
  type MailboxImportPorts,
  recordMailboxImportProgress,
} from '../../commands/mailbox-imports/handlers.ts';
import { importDraft } from '../../commands/drafts/handlers.ts';
import type { FilingLookups } from '../../commands/threads/handlers.ts';
import { fileImportedMessage, labelImportedThread } from '../../commands/threads/imports.ts';
import { PendingThreading } from '../../domain/messages/pending-threading.ts';
import type { ImportFile, ImportOptions, ImportProgress } from '../../domain/mailbox-imports/events.ts';
import { importedDraftContent } from '../../domain/mailbox-imports/drafts.ts';
import { type Placement, placeMessage, splitLabels } from '../../domain/mailbox-imports/formats.ts';
import type { MessageSummary } from '../../domain/messages/summary.ts';
import { type ThreadingKnowledge, threadingKeys, threadingMessageOf } from '../../domain/messages/threading.ts';
import { DomainError } from '../../domain/shared/errors.ts';
import { digestId } from '../../domain/shared/ids.ts';
import { mailboxOwnerOf } from '../../domain/shared/mailbox-owners.ts';
import type { Mailbox } from '../../domain/threads/events.ts';
import type { BlobRef, BlobStore } from '../../infra/blobs/port.ts';
import type { Delivery as Job, JobOutcome, WorkQueue } from '../../infra/bus/port.ts';
import { parseMessage } from '../../infra/inbound/summary.ts';
import type { TextIndex } from '../../infra/search/port.ts';
import { type DueWork, type RunStep, runStepWork, type DueWakeups } from '../due-work.ts';
import { Repeating } from '../repeating.ts';
import { prepareAhead } from './ahead.ts';
import { numbered, type SplitMessage, splitMbox, startingAt, wholeMessage } from './split.ts';

/** The member after `path` in an archive (the checkpoint once a member is read through). */
const after = (path: number[]) => [...path.slice(0, -1), path[path.length - 1]! + 1];
const samePath = (a: number[], b: number[]) => a.length === b.length && a.every((n, i) => n === b[i]);

export interface MailboxImportOptions {
  queue: string;
  pollMs: number;
  /** A step enqueued this long ago without an outcome is enqueued again (its process died). */
  staleAfterMs: number;
  concurrency: number;
  /** A step ends (and checkpoints) after this many messages, or this long, whichever comes first. */
  batchMessages: number;
  batchMs: number;
  /** A message larger than this is not imported (counted in `notImported`): memory holds one message. */
  messageBytesMax: number;
  /**
   * A step through an archive goes on past its batch (checkpointing after each) for at least this
   * long: a resumed step re-reads its entry from the start (a tgz its archive), so steps are few
   * and long (`archiveStepLength`). Each checkpoint marks the step alive (its `enqueued_at`), so
   * a step longer than `staleAfterMs` is not taken twice.
   */
  archiveStepMs: number;
  /** …or this many times what the step took to get back to where the last one stopped, if longer. */
  archiveResumeFactor: number;
  /**
   * …but never longer than this: a step remembers what it filed until it ends (its
   * `PendingThreading`), so its length bounds the memory an import takes, whatever the file's size.
   */
  archiveStepMaxMs: number;
  /**
   * An import still `uploading` this long after its last part (or its creation, before any) is
   * cancelled and its parts deleted: a week, as resumable upload APIs commonly keep an unfinished
   * upload.
   */
  uploadExpiryMs: number;
  /** How often such uploads are looked for. */
  uploadExpiryEveryMs: number;
  /** Messages stored and parsed ahead of their filing, at most this many and this many bytes of them. */
  prepareAhead: { items: number; bytes: number };
}

export const DEFAULT_MAILBOX_IMPORT_OPTIONS: MailboxImportOptions = {
  queue: 'mailbox-import-runs',
  pollMs: 250,
  staleAfterMs: 300_000,
  concurrency: 2,
  batchMessages: 200,
  batchMs: 5_000,
  messageBytesMax: 64 * 1024 * 1024,
  archiveStepMs: 60_000,
  archiveResumeFactor: 10,
  archiveStepMaxMs: 300_000,
  uploadExpiryMs: 7 * 24 * 3_600_000,
  uploadExpiryEveryMs: 3_600_000,
  prepareAhead: { items: 8, bytes: 16 * 1024 * 1024 },
};

/**
 * How long a step through an archive runs: `stepMs`, or `factor` times what it took to get back
 * to where the last step stopped, whichever is longer, up to `maxMs`. Getting back re-reads the
 * member from its start, which grows with the position: a 2 GB takeout tgz in one-minute steps
 * took 1.8 times as long as the same mbox bare (docs/benchmarks.md). With a factor of 10, resuming
 * costs about a tenth of the import until the steps reach `maxMs` (a member of tens of GB).
 */
export function archiveStepLength(stepMs: number, resumedMs: number, factor: number, maxMs: number): number {
  return Math.min(maxMs, Math.max(stepMs, factor * resumedMs));
}

export interface MailboxImportDeps {
  pool: pg.Pool;
  bus: WorkQueue;
  wakeups: DueWakeups;
  commands: CommandContext;
  ports: MailboxImportPorts;
  blobs: BlobStore;
  texts: TextIndex;
  lookups: Pick<FilingLookups, 'threading'>;
}

/**
 * A batch of an import's messages: its commands do not wait for the read models one by one, and
 * `settled` waits once for them at its end, before the checkpoint moves past it. `atHead` waits,
 * once for the batch, until the read models hold the whole log as it stands (what a step before,
 * or a crashed one, appended), before a message claimed earlier is looked for.
 */
interface Batch {
  commands: CommandContext;
  settled(): Promise<void>;
  atHead(): Promise<void>;
}

/** A message of the file as `prepare` left it for its filing. */
type Prepared =
  | { kind: 'notImported' }
  | { kind: 'skipped' }
  | { kind: 'duplicate' }
  | {
      kind: 'draft';
      claim: 'new' | 'ours';
      summary: MessageSummary;
      draft: ReturnType<typeof importedDraftContent>;
    }
  | {
      kind: 'mail';
      claim: 'new' | 'ours';
      key: string;
      stored: BlobRef;
      summary: MessageSummary;
      place: Extract<Placement, { draft: false }>;
      /** What the read models knew for its threading when it was prepared (PendingThreading adds the rest). */
      known: ThreadingKnowledge;
    };

interface Run {
  id: string;
  workspace_id: string;
  mailbox: Mailbox;
  files: ImportFile[];
  chunk_bytes: string;
  options: ImportOptions;
  formats: string[];
  status: 'queued' | 'running';
  file: number;
  at_byte: string;
  entry: number[];
  ordinal: number;
  progress: ImportProgress;
  labels_skipped: string[];
  seq: number;
}

/** The dedupe key of a message in its mailbox: its Message-ID and the hash of its bytes. */
export const importKey = (messageId: string | null, sha256: string) =>
  createHash('sha256')
    .update(`${messageId ?? ''}\n${sha256}`)
    .digest('hex');

const header = (headers: { name: string; value: string }[], name: string) =>
  headers.find((h) => h.name.toLowerCase() === name)?.value ?? null;

/**
 * The process manager of mailbox imports. Each job takes one step of a run (schedule.ts) from its
 * checkpoint and moves `seq` on, so a duplicate job is a no-op:
 *  - the first appends `MailboxImportStarted` (a cancel appended first wins);
 *  - each later step reads the file under way from the checkpoint's byte (a message boundary),
 *    imports up to `batchMessages` messages, then stores the byte after the last with the
 *    progress (one `MailboxImportProgressed`): the checkpoint. A crash repeats at most one batch:
 *    each message claims its dedupe key with its place in the import (`mailbox_import_keys`) and
 *    is filed under an id drawn from that place, so a repeat finds what it filed and counts it
 *    once;
 *  - after the last file the import completes; a fault fails it with `lastError`; either way the
 *    upload is deleted (`uploadDeleted`). A cancel ends the run at the next message it checks.
 */
export class MailboxImportProcess {
  private readonly work: DueWork<RunStep>;
  private readonly expiry: Repeating;

  constructor(
    private readonly deps: MailboxImportDeps,
    private readonly options: MailboxImportOptions = DEFAULT_MAILBOX_IMPORT_OPTIONS,
  ) {
    this.work = runStepWork(deps, options, 'mailbox import', 'mailbox_import_runs', "status IN ('queued', 'running')");
    this.expiry = new Repeating(
      'mailbox import upload expiry',
      () => this.expireUploads(),
      options.uploadExpiryEveryMs,
    );
  }

  async start(): Promise<void> {
    this.expiry.start(Math.min(5_000, this.options.uploadExpiryEveryMs));
    await this.work.start((job) => this.handle(job), {
      concurrency: this.options.concurrency,
      retryOnErrorMs: 1000,
      onError: (error) => console.error('mailbox import:', error),
    });
  }

  async stop(): Promise<void> {
    await this.expiry.stop();
    await this.work.stop();
  }

  /**
   * One pass of the upload expiry: each import still uploading `uploadExpiryMs` after its last
   * part (the storage's time of its folder; its creation when no part came) is cancelled through
   * the cancel of the api, by the service and with its reason, which deletes its parts
   * (`uploadDeleted`). An import started meanwhile is left (the cancel refuses it).
   */
  private async expireUploads(): Promise<number> {
    const { uploadExpiryMs, uploadExpiryEveryMs } = this.options;
    const span =
      uploadExpiryMs % 86_400_000 === 0 ? `${uploadExpiryMs / 86_400_000} days` : `${uploadExpiryMs / 1000} s`;
    const reason = `Expired: no part was uploaded for ${span}, and it was not started.`;
    let after: [Date, string] = [new Date(0), ''];
    for (;;) {
      const now = Date.now();
      const { rows } = await this.deps.pool.query<{ id: string; workspace_id: string; created_at: Date }>(
        `SELECT id, workspace_id, created_at FROM mailbox_imports
         WHERE status = 'uploading' AND created_at <= $1 AND (created_at, id) > ($2, $3)
         ORDER BY created_at, id LIMIT 100`,
        [new Date(now - uploadExpiryMs), after[0], after[1]],
      );
      for (const row of rows) {
        const last = (await this.deps.ports.storage.lastWrite(row.id)) ?? row.created_at;
        if (now - Math.max(last.getTime(), row.created_at.getTime()) < uploadExpiryMs) continue;
        const actor: Actor = { workspaceId: row.workspace_id, kind: 'system', id: 'mailbox-import-expiry' };
        await cancelMailboxImport(this.deps.commands, this.deps.ports, actor, row.id, new Date().toISOString(), reason);
      }
      if (rows.length < 100) return uploadExpiryEveryMs;
      const end = rows[rows.length - 1]!;
      after = [end.created_at, end.id];
    }
  }

  private async handle(job: Job): Promise<JobOutcome> {
    const { id, seq } = job.payload as { id: string; seq: number };
    const { rows } = await this.deps.pool.query<Run>(
      "SELECT * FROM mailbox_import_runs WHERE id = $1 AND seq = $2 AND status IN ('queued', 'running') AND due_at <= now()",
      [id, seq],
    );
    const run = rows[0];
    if (!run) return { ack: true };
    const actor: Actor = { workspaceId: run.workspace_id, kind: 'system', id: run.id };
    if (run.status === 'queued') {
      const status = await beginMailboxImport(this.deps.commands, actor, run.id, new Date().toISOString());
      await this.advance(run, { status: status === 'running' ? 'running' : 'done' });
    } else await this.step(run, actor);
    return { ack: true };
  }

  /** The checkpoint: only from the step read (`seq`), never after a cancel; false when it was not stored. */
  private async advance(
    run: Run,
    next: {
      status: 'running' | 'done';
      file?: number;
      at?: number;
      entry?: number[];
      ordinal?: number;
      progress?: ImportProgress;
      skipped?: string[];
    },
  ): Promise<boolean> {
    const { rowCount } = await this.deps.pool.query(
      `UPDATE mailbox_import_runs SET seq = seq + 1, enqueued_at = NULL, status = $3, file = $4, at_byte = $5,
         ordinal = $6, progress = $7::jsonb, labels_skipped = $8, entry = $9, due_at = now()
       WHERE id = $1 AND seq = $2 AND status <> 'done'`,
      [
        run.id,
        run.seq,
        next.status,
        next.file ?? run.file,
        next.at ?? Number(run.at_byte),
        next.ordinal ?? run.ordinal,
        JSON.stringify(next.progress ?? run.progress),
        next.skipped ?? run.labels_skipped,
        next.entry ?? run.entry,
      ],
    );
    return rowCount === 1;
  }

  private async cancelled(id: string): Promise<boolean> {
    const { rows } = await this.deps.pool.query("SELECT 1 FROM mailbox_import_runs WHERE id = $1 AND status = 'done'", [
      id,
    ]);
    return rows.length > 0;
  }

  private async finish(run: Run, actor: Actor, progress: ImportProgress, error: string | null): Promise<void> {
    await finishMailboxImport(this.deps.commands, actor, run.id, { progress, error }, new Date().toISOString());
    await deleteImportUpload(this.deps.commands, this.deps.ports, actor, run.id);
    await this.advance(run, { status: 'done', progress });
  }

  /**
   * The messages of a file, numbered on from `ordinal` (their places in the import), with their
   * preparation (`prepare`) run ahead of their filing.
   */
  private ahead(run: Run, messages: AsyncIterable<SplitMessage>, ordinal: number) {
    const { prepareAhead: limits } = this.options;
    return prepareAhead(
      numbered(messages, ordinal),
      (m) => this.prepare(run, m.message, m.ordinal),
      (m) => m.message.raw?.length ?? 0,
      limits,
    );
  }

  /**
   * Frees the keys claimed by messages prepared ahead and never filed (past `filed`, the last
   * ordinal filed), when a step ends for good (a cancel, a failure): a later import of them must
   * not meet claims of this one. A key of a filed message freed with them costs nothing: its
   * thread holds the message, and a later import finds it there (a duplicate all the same).
   */
  private async releaseClaims(run: Run, filed: number): Promise<void> {
    await this.deps.pool.query(
      'DELETE FROM mailbox_import_keys WHERE workspace_id = $1 AND address = $2 AND import_id = $3 AND ordinal > $4',
      [run.workspace_id, run.mailbox.address, run.id, filed],
    );
  }

  private batch(): Batch {
    const writes = deferredWrites(this.deps.commands);
    const { store, readModels } = this.deps.commands;
    let atHead: Promise<void> | null = null;
    return {
      commands: writes.commands,
      settled: writes.settled,
      atHead: () =>
        (atHead ??= store
          .headPosition()
          .then((head) => readModels.waitFor(head, ['MessageImported'], { onDeadline: () => true }))),
    };
  }

  /**
   * The end of a step that read on to its checkpoint: its writes settled, its progress recorded,
   * the checkpoint stored. A checkpoint refused (cancelled while the step ran, unseen between its
   * checks) frees the claims its messages prepared ahead made.
   */
  private async endStep(
    run: Run,
    actor: Actor,
    batch: Batch,
    progress: ImportProgress,
    next: { file: number; at: number; entry?: number[]; ordinal: number; skipped: string[] },
  ): Promise<void> {
    await batch.settled();
    await recordMailboxImportProgress(this.deps.commands, actor, run.id, progress, new Date().toISOString());
    if (!(await this.advance(run, { status: 'running', ...next, progress })))
      await this.releaseClaims(run, next.ordinal);
  }

  private async step(run: Run, actor: Actor): Promise<void> {
    const progress: ImportProgress = structuredClone(run.progress);
    let file = run.file;
    let at = Number(run.at_byte);
    let ordinal = run.ordinal;
    const chunkBytes = Number(run.chunk_bytes);
    const labels = new ImportLabels(
      this.deps.commands,
      actor,
      { owner: mailboxOwnerOf(run.mailbox), address: run.mailbox.address },
      run.labels_skipped,
    );
    const done = (upTo: number, byte: number) => run.files.slice(0, upTo).reduce((sum, f) => sum + f.bytes, 0) + byte;
    if (file >= run.files.length) return this.finish(run, actor, { ...progress, processedBytes: done(file, 0) }, null);

    const current = run.files[file]!;
    const format = run.formats[file];
    if (format === 'zip' || format === 'tgz') return this.stepArchive(run, actor, labels, progress, format);
    let finishedFile = true;
    // Ended from outside (a cancel): the loops are left first, so that nothing prepared ahead is
    // still claiming when the claims are freed.
    let ended = false;
    const batch = this.batch();
    const pending = new PendingThreading();
    try {
      if (at < current.bytes) {
        const source = this.deps.ports.storage.read(run.id, file, current.chunks, chunkBytes, at);
        const max = this.options.messageBytesMax;
        const messages = format === 'eml' ? wholeMessage(source, max) : splitMbox(source, at, max);
        const started = Date.now();
        let n = 0;
        try {
          for await (const { item, prepared } of this.ahead(run, messages, ordinal)) {
            ordinal = item.ordinal;
            await this.importOne(run, actor, batch, pending, prepared, ordinal, progress, labels);
            at = item.message.next;
            n++;
            if (n % 10 === 0 && (await this.cancelled(run.id))) {
              ended = true;
              break;
            }
            if (n >= this.options.batchMessages || Date.now() - started >= this.options.batchMs) {
              finishedFile = at >= current.bytes;
              break;
            }
          }
        } finally {
          source.destroy();
        }
      }
    } catch (error) {
      await this.releaseClaims(run, ordinal);
      // A cancel deletes the files under a running step: that is no failure.
      if (await this.cancelled(run.id)) return;
      await batch.settled();
      const reason = error instanceof Error ? error.message : String(error);
      return this.finish(
        run,
        actor,
        { ...progress, processedBytes: done(file, at) },
        `File ${file} (${current.name}) could not be read past byte ${at}: ${reason}`,
      );
    }
    if (ended) return this.releaseClaims(run, ordinal);
    if (finishedFile) {
      file++;
      at = 0;
    }
    progress.processedBytes = done(file, at);
    progress.labelsCreated += labels.created;
    progress.labelsSkipped = labels.skipped.size;
    await this.endStep(run, actor, batch, progress, { file, at, ordinal, skipped: [...labels.skipped] });
  }

  /**
   * A step through an archive (.zip, .tgz): its mail files in order from the checkpoint's member
   * (`entry`, its path in the archive) and, in it, the message starting at or after `at_byte` (the
   * member is read again from its start and the messages before it passed over). After each batch
   * the checkpoint is stored in place (the same `seq`, so the step stays one job) and the progress
   * recorded; after `archiveStepMs` the step ends as an mbox step does. A refusal the directory did
   * not show (checked at start) fails the import with `lastError`.
   */
  private async stepArchive(
    run: Run,
    actor: Actor,
    labels: ImportLabels,
    progress: ImportProgress,
    format: 'zip' | 'tgz',
  ): Promise<void> {
    const { file } = run;
    const current = run.files[file]!;
    const before = run.files.slice(0, file).reduce((sum, f) => sum + f.bytes, 0);
    const createdBefore = progress.labelsCreated;
    let entry = run.entry;
    let at = Number(run.at_byte);
    let ordinal = run.ordinal;
    let position = () => 0;
    let finished = false;
    let stopped = false;
    let ended = false;
    const stepStarted = Date.now();
    let batchStarted = stepStarted;
    // How long this step took to get back to where the last one stopped.
    let resumedMs: number | undefined;
    let n = 0;
    let batch = this.batch();
    const pending = new PendingThreading();
    const snapshot = () => {
      progress.processedBytes = before + (finished ? current.bytes : Math.min(position(), current.bytes));
      progress.labelsCreated = createdBefore + labels.created;
      progress.labelsSkipped = labels.skipped.size;
      return progress;
    };
    const members = this.deps.ports.archives.members(
      {
        importId: run.id,
        file,
        bytes: current.bytes,
        chunks: current.chunks,
        chunkBytes: Number(run.chunk_bytes),
        format,
      },
      entry,
    );
    try {
      read: for await (const member of members) {
        position = member.position;
        const skip = samePath(member.path, entry) ? at : 0;
        const max = this.options.messageBytesMax;
        const messages =
          member.format === 'eml' ? wholeMessage(member.content, max) : splitMbox(member.content, 0, max);
        for await (const { item, prepared } of this.ahead(run, startingAt(messages, skip), ordinal)) {
          resumedMs ??= Date.now() - stepStarted;
          ordinal = item.ordinal;
          await this.importOne(run, actor, batch, pending, prepared, ordinal, progress, labels);
          entry = member.path;
          at = item.message.next;
          n++;
          if (n % 10 === 0 && (await this.cancelled(run.id))) {
            ended = true;
            break read;
          }
          if (n >= this.options.batchMessages || Date.now() - batchStarted >= this.options.batchMs) {
            if (
              Date.now() - stepStarted >=
              archiveStepLength(
                this.options.archiveStepMs,
                resumedMs ?? 0,
                this.options.archiveResumeFactor,
                this.options.archiveStepMaxMs,
              )
            ) {
              stopped = true;
              break read;
            }
            await batch.settled();
            batch = this.batch();
            if (!(await this.save(run, { entry, at, ordinal, progress: snapshot(), skipped: [...labels.skipped] }))) {
              ended = true;
              break read;
            }
            await recordMailboxImportProgress(this.deps.commands, actor, run.id, progress, new Date().toISOString());
            n = 0;
            batchStarted = Date.now();
          }
        }
        entry = after(member.path);
        at = 0;
      }
      finished = !stopped;
    } catch (error) {
      await this.releaseClaims(run, ordinal);
      if (await this.cancelled(run.id)) return;
      await batch.settled();
      const reason = error instanceof Error ? error.message : String(error);
      return this.finish(run, actor, snapshot(), `File ${file} (${current.name}): ${reason}`);
    }
    if (ended) return this.releaseClaims(run, ordinal);
    const skipped = [...labels.skipped];
    await this.endStep(
      run,
      actor,
      batch,
      snapshot(),
      finished ? { file: file + 1, at: 0, entry: [], ordinal, skipped } : { file, at, entry, ordinal, skipped },
    );
  }

  /** A checkpoint within a step: the same `seq` (the job goes on); false when the import ended meanwhile. */
  private async save(
    run: Run,
    next: { entry: number[]; at: number; ordinal: number; progress: ImportProgress; skipped: string[] },
  ): Promise<boolean> {
    const { rowCount } = await this.deps.pool.query(
      `UPDATE mailbox_import_runs SET entry = $3, at_byte = $4, ordinal = $5, progress = $6::jsonb, labels_skipped = $7,
         enqueued_at = now()
       WHERE id = $1 AND seq = $2 AND status = 'running'`,
      [run.id, run.seq, next.entry, next.at, next.ordinal, JSON.stringify(next.progress), next.skipped],
    );
    return rowCount === 1;
  }

  /**
   * Claims the key for this message of this import: `new`, `ours` (claimed before a crash), or
   * `duplicate`. Messages are claimed ahead of their filing, so two of one import with one key may
   * claim at once: the one that waited on the other's insert finds no row in the snapshot its
   * statement began with, and asks again.
   */
  private async claim(run: Run, key: string, ordinal: number): Promise<'new' | 'ours' | 'duplicate'> {
    for (;;) {
      const { rows } = await this.deps.pool.query<{ import_id: string; ordinal: number; inserted: boolean }>(
        `WITH ins AS (
           INSERT INTO mailbox_import_keys (workspace_id, address, key, import_id, ordinal) VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT DO NOTHING RETURNING import_id, ordinal, true AS inserted)
         SELECT * FROM ins
         UNION ALL SELECT import_id, ordinal, false FROM mailbox_import_keys
           WHERE workspace_id = $1 AND address = $2 AND key = $3 AND NOT EXISTS (SELECT 1 FROM ins)`,
        [run.workspace_id, run.mailbox.address, key, run.id, ordinal],
      );
      const row = rows[0];
      if (row === undefined) continue;
      if (row.inserted) return 'new';
      return row.import_id === run.id && row.ordinal === ordinal ? 'ours' : 'duplicate';
    }
  }

  /**
   * What a message's filing needs that no other message's filing decides: its bytes stored, its
   * summary parsed, its place (options and takeout labels), its key claimed at its place in the
   * import and, for mail filed in a thread, its words in the text index (which the threads read
   * model reads as it files the message) and what the read models know for its threading (what
   * the step filed before it is added at its filing, from the step's PendingThreading).
   */
  private async prepare(run: Run, message: SplitMessage, ordinal: number): Promise<Prepared> {
    if (message.raw === null || message.raw.length === 0) return { kind: 'notImported' };
    const { blobs, texts, lookups } = this.deps;
    let stored: BlobRef;
    let parsed: Awaited<ReturnType<typeof parseMessage>>;
    try {
      stored = await blobs.put(message.raw);
      parsed = await parseMessage(blobs, message.raw, message.raw.length);
    } catch {
      return { kind: 'notImported' };
    }
    const s = parsed.summary;
    const labelsHeader = header(s.headers, 'x-gmail-labels');
    const place = placeMessage(
      {
        labels: labelsHeader === null ? null : splitLabels(labelsHeader),
        fromSelf: s.from?.address.toLowerCase() === run.mailbox.address,
        status: header(s.headers, 'status'),
      },
      run.options,
    );
    if (place.skip) return { kind: 'skipped' };
    const key = importKey(s.messageId, stored.sha256);
    if (place.draft) {
      // Checked before the key is claimed: a message no draft can hold is not imported, and a later
      // import of it must meet the same answer, not this import's claim.
      let draft: ReturnType<typeof importedDraftContent>;
      try {
        draft = importedDraftContent(s, parsed.body, run.mailbox.address);
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        return { kind: 'notImported' };
      }
      const claim = await this.claim(run, key, ordinal);
      return claim === 'duplicate' ? { kind: 'duplicate' } : { kind: 'draft', claim, summary: s, draft };
    }
    const claim = await this.claim(run, key, ordinal);
    if (claim === 'duplicate') return { kind: 'duplicate' };
    const keys = threadingKeys(threadingMessageOf(s, ''));
    const [known] = await Promise.all([
      lookups.threading(run.workspace_id, run.mailbox.address, { messageId: s.messageId, ...keys }),
      texts.put(stored.sha256, parsed.searchText),
    ]);
    return {
      kind: 'mail',
      claim,
      key,
      stored,
      summary: s,
      place,
      known,
    };
  }

  /** Files a prepared message in the import's order: a draft, or mail in its thread with its labels. */
  private async importOne(
    run: Run,
    actor: Actor,
    batch: Batch,
    pending: PendingThreading,
    prepared: Prepared,
    ordinal: number,
    progress: ImportProgress,
    labels: ImportLabels,
  ): Promise<void> {
    const counts = progress.counts;
    if (prepared.kind === 'notImported' || prepared.kind === 'skipped' || prepared.kind === 'duplicate') {
      counts[prepared.kind]++;
      return;
    }
    const { commands } = batch;
    const s = prepared.summary;
    if (prepared.kind === 'draft') {
      // Made under an id drawn from the place, as a message is filed: a repeat records nothing.
      const draftId = digestId('importedDraft', `${run.id}:${ordinal}`);
      await importDraft(commands, actor, draftId, prepared.draft, s.attachments, new Date().toISOString());
      counts.imported++;
      return;
    }
    const { place, key, known } = prepared;
    const messageId = digestId('importedMessage', `${run.id}:${ordinal}`);
    const now = new Date().toISOString();
    const label = async (threadId: string) => {
      const ids = await labels.ids(place.custom, now);
      if (ids.length > 0) await labelImportedThread(commands, actor, threadId, ids, await labels.known(), now);
    };
    if (prepared.claim === 'ours') {
      // Claimed before: ahead by the step before this one (not filed), or before a crash (maybe
      // filed). Filed already if its message is there, once the read models have what a crashed
      // batch appended without waiting for them.
      await batch.atHead();
      const { rows } = await this.deps.pool.query<{ thread_id: string }>(
        'SELECT thread_id FROM thread_messages WHERE id = $1',
        [messageId],
      );
      if (rows[0]) {
        await label(rows[0].thread_id);
        counts.imported++;
        return;
      }
    }
    const date = s.date !== null && !Number.isNaN(Date.parse(s.date)) ? s.date : now;
    const filed = await fileImportedMessage(
      commands,
      { threading: async () => known },
      run.workspace_id,
      run.mailbox,
      {
        messageId,
        importId: run.id,
        importKey: key,
        direction: place.direction,
        raw: prepared.stored,
        summary: s,
        unread: place.unread,
        at: date,
        wanted: place.wanted,
      },
      pending,
    );
    if (filed === null) {
      // Its thread holds the same message already (it arrived live): a duplicate, and the key is
      // freed so that a later import meets the same answer, not this import's claim.
      await this.deps.pool.query(
        'DELETE FROM mailbox_import_keys WHERE workspace_id = $1 AND address = $2 AND key = $3 AND import_id = $4',
        [run.workspace_id, run.mailbox.address, key, run.id],
      );
      counts.duplicate++;
      return;
    }
    await label(filed.threadId);
    counts.imported++;
  }
}
