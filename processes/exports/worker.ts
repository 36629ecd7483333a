import type pg from 'pg';
import type { Actor, CommandContext } from '../../commands/execute.ts';
import {
  completeExport,
  failExport,
  recordExportFileDeleted,
  recordExportProgress,
  startExport,
} from '../../commands/exports/handlers.ts';
import type { ExportCounts, ExportPhase } from '../../domain/exports/events.ts';
import { emptyCalendar, entryName, mboxFromLine, vCard } from '../../domain/exports/formats.ts';
import type { BlobStore } from '../../infra/blobs/port.ts';
import type { Delivery as Job, JobOutcome, WorkQueue } from '../../infra/bus/port.ts';
import { type DueWork, type RunStep, runStepWork, type DueWakeups } from '../due-work.ts';
import { Repeating } from '../repeating.ts';
import { ExportZip, mboxMessage } from './archive.ts';

export interface ExportOptions {
  queue: string;
  pollMs: number;
  /** A run on the bus this long without a heartbeat is taken again (its process died). */
  staleAfterMs: number;
  concurrency: number;
  /** Threads (and contacts, members) read per query. */
  pageRows: number;
  /** Progress is recorded (`ExportProgressed`) at most this often, and at each new phase. */
  progressEveryMs: number;
  /** How often expired exports' zips are looked for and deleted. */
  retentionEveryMs: number;
}

export const DEFAULT_EXPORT_OPTIONS: ExportOptions = {
  queue: 'export-runs',
  pollMs: 500,
  staleAfterMs: 300_000,
  concurrency: 1,
  pageRows: 200,
  progressEveryMs: 2_000,
  retentionEveryMs: 3_600_000,
};

export interface ExportDeps {
  pool: pg.Pool;
  bus: WorkQueue;
  wakeups: DueWakeups;
  commands: CommandContext;
  blobs: BlobStore;
}

/** The attempt stops without settling: the system is stopping, or a later attempt took the export over. */
class Interrupted extends Error {}

interface Attempt {
  id: string;
  workspaceId: string;
  attempt: number;
  actor: Actor;
  threadsTotal: number;
  threadsDone: number;
  phase: ExportPhase;
  recordedAt: number;
  counts: ExportCounts;
}

const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;

/**
 * The process manager of exports. Each job is one attempt at a whole zip: the zip is one stream
 * from the first entry to the manifest (archive.ts), piped into the blob store, so an attempt
 * cannot resume half-way; a process that died mid-way is followed by a new attempt that starts
 * over (`attempt` bumped on the run, a new `ExportStarted`), and the bytes the dead one wrote were
 * never a blob (a put that does not finish leaves nothing). While it writes, an attempt moves the
 * run's `enqueued_at` on (a heartbeat), so the dispatcher does not take a live attempt for a
 * dead one. A second loop deletes the zips of exports past their expiry (`ExportFileDeleted`).
 */
export class ExportProcess {
  private readonly work: DueWork<RunStep>;
  private readonly retention: Repeating;
  private stopping = false;

  constructor(
    private readonly deps: ExportDeps,
    private readonly options: ExportOptions = DEFAULT_EXPORT_OPTIONS,
  ) {
    this.work = runStepWork(deps, options, 'export', 'export_runs', "status IN ('queued', 'running')");
    this.retention = new Repeating('export retention', () => this.deleteExpired(), options.retentionEveryMs);
  }

  async start(): Promise<void> {
    this.stopping = false;
    await this.work.start((job) => this.handle(job), {
      concurrency: this.options.concurrency,
      retryOnErrorMs: 1000,
      onError: (error) => console.error('export:', error),
    });
    this.retention.start();
  }

  /** An attempt under way stops at its next page and stays `running`: the next start begins it again. */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.retention.stop();
    await this.work.stop();
  }

  private async handle(job: Job): Promise<JobOutcome> {
    const { id, seq } = job.payload as { id: string; seq: number };
    const { rows } = await this.deps.pool.query<{ workspace_id: string; attempt: number }>(
      `UPDATE export_runs SET attempt = attempt + 1, seq = seq + 1, status = 'running', enqueued_at = now()
       WHERE id = $1 AND seq = $2 AND status IN ('queued', 'running') AND due_at <= now()
       RETURNING workspace_id, attempt`,
      [id, seq],
    );
    const row = rows[0];
    if (!row) return { ack: true };
    const actor: Actor = { workspaceId: row.workspace_id, kind: 'system', id };
    const { rows: total } = await this.deps.pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM threads WHERE workspace_id = $1',
      [row.workspace_id],
    );
    const threadsTotal = total[0]!.n;
    const now = new Date().toISOString();
    if (!(await startExport(this.deps.commands, actor, { exportId: id, attempt: row.attempt, threadsTotal }, now))) {
      await this.settle(id, row.attempt, null);
      return { ack: true };
    }
    const attempt: Attempt = {
      id,
      workspaceId: row.workspace_id,
      attempt: row.attempt,
      actor,
      threadsTotal,
      threadsDone: 0,
      phase: 'mail',
      recordedAt: Date.now(),
      counts: {},
    };
    const heartbeat = setInterval(
      () =>
        void this.deps.pool
          .query('UPDATE export_runs SET enqueued_at = now() WHERE id = $1 AND attempt = $2', [id, row.attempt])
          .catch(() => {}),
      Math.max(50, Math.floor(this.options.staleAfterMs / 3)),
    );
    try {
      const file = await this.write(attempt);
      const finished = new Date().toISOString();
      const fileName = `workspace-export-${finished.slice(0, 10)}-${id}.zip`;
      const input = { exportId: id, attempt: row.attempt, file, fileName, counts: attempt.counts };
      const expiresAt = await completeExport(this.deps.commands, actor, input, finished);
      if (expiresAt !== null) await this.settle(id, row.attempt, { sha256: file.sha256, expiresAt });
      else await this.deps.blobs.delete(file.sha256);
    } catch (error) {
      if (error instanceof Interrupted) return { ack: true };
      const reason = error instanceof Error ? error.message : String(error);
      console.error(`export ${id}:`, error);
      await failExport(this.deps.commands, actor, id, `The export could not be written: ${reason}`, now);
      await this.settle(id, row.attempt, null);
    } finally {
      clearInterval(heartbeat);
    }
    return { ack: true };
  }

  /** The run is done; a ready one keeps its zip's address and expiry for the retention. */
  private async settle(id: string, attempt: number, zip: { sha256: string; expiresAt: string } | null): Promise<void> {
    await this.deps.pool.query(
      `UPDATE export_runs SET status = 'done', enqueued_at = NULL, sha256 = $3, expires_at = $4
       WHERE id = $1 AND attempt = $2`,
      [id, attempt, zip?.sha256 ?? null, zip?.expiresAt ?? null],
    );
  }

  /** Between pages: stop when the system stops or a later attempt took the export. */
  private async check(a: Attempt): Promise<void> {
    if (this.stopping) throw new Interrupted('stopping');
    const { rows } = await this.deps.pool.query<{ attempt: number }>('SELECT attempt FROM export_runs WHERE id = $1', [
      a.id,
    ]);
    if (rows[0]?.attempt !== a.attempt) throw new Interrupted('superseded');
  }

  private async progress(a: Attempt, phase: ExportPhase): Promise<void> {
    const due = Date.now() - a.recordedAt >= this.options.progressEveryMs;
    if (phase === a.phase && !due) return;
    a.phase = phase;
    a.recordedAt = Date.now();
    await recordExportProgress(
      this.deps.commands,
      a.actor,
      { exportId: a.id, attempt: a.attempt, phase, threadsDone: a.threadsDone, threadsTotal: a.threadsTotal },
      new Date().toISOString(),
    );
  }

  private count(a: Attempt, kind: string, n = 1): void {
    a.counts[kind] = (a.counts[kind] ?? 0) + n;
  }

  /** Plans every entry, then streams the zip into the blob store. */
  private async write(a: Attempt): Promise<{ sha256: string; size: number }> {
    const q = async <R extends pg.QueryResultRow>(text: string, values: unknown[]) =>
      (await this.deps.pool.query<R>(text, values)).rows;
    const ws = a.workspaceId;
    const zip = new ExportZip(new Date());
    const paths = new Set<string>();
    /** A path not taken yet: a second `x.json` becomes `x-2.json`. */
    const unique = (path: string) => {
      let candidate = path;
      for (let n = 2; paths.has(candidate); n++) candidate = path.replace(/(\.[a-z]+)$/, `-${n}$1`);
      paths.add(candidate);
      return candidate;
    };

    for (const kind of ['threads', 'messages', 'attachments', 'attachmentBytes'] as const) a.counts[kind] = 0;
    const files = await q<{ n: number; bytes: string }>(
      `SELECT count(*)::int AS n, coalesce(sum(size), 0)::text AS bytes FROM files
       WHERE workspace_id = $1 AND source = 'attachment'`,
      [ws],
    );
    a.counts.attachments = files[0]!.n;
    a.counts.attachmentBytes = Number(files[0]!.bytes);

    const groups = await q<{ address: string; label: string }>(
      'SELECT DISTINCT address, label FROM threads WHERE workspace_id = $1 ORDER BY address, label',
      [ws],
    );
    for (const g of groups)
      zip.add(unique(`mail/${entryName(g.address)}/${entryName(g.label)}.mbox`), () =>
        this.mbox(a, 'address = $2 AND label = $3', [g.address, g.label], true),
      );
    const labels = await q<{ id: string; address: string; name: string; color: string | null; created_at: Date }>(
      'SELECT id, address, name, color, created_at FROM labels WHERE workspace_id = $1 ORDER BY address, name, id',
      [ws],
    );
    for (const l of labels)
      zip.add(unique(`mail/${entryName(l.address)}/labels/${entryName(l.name)}.mbox`), () =>
        this.mbox(a, 'address = $2 AND $3 = ANY(custom_labels)', [l.address, l.id], false),
      );

    zip.add(unique('contacts/contacts.vcf'), () => this.contacts(a));

    const audiences = await q<{ id: string }>('SELECT id FROM audiences WHERE workspace_id = $1 ORDER BY id', [ws]);
    a.counts.audiences = audiences.length;
    a.counts.audienceMembers = 0;
    for (const audience of audiences)
      zip.add(unique(`audiences/${entryName(audience.id)}.json`), () => this.audience(a, audience.id));

    a.counts.calendarEvents = 0;
    zip.add(
      unique('calendar/calendar.ics'),
      async function* (this: ExportProcess) {
        await this.progress(a, 'calendar');
        yield emptyCalendar();
      }.bind(this),
    );

    const templates = await q<Record<string, unknown> & { id: string }>(
      `SELECT id, name, slug, description, archived, published_version AS "publishedVersion",
              latest_version AS "latestVersion", created_at AS "createdAt", updated_at AS "updatedAt"
       FROM templates WHERE workspace_id = $1 AND registered ORDER BY id`,
      [ws],
    );
    const versions = await q<{ template_id: string; version: number; has_html: boolean }>(
      `SELECT v.template_id, v.version, v.html IS NOT NULL AS has_html FROM template_versions v
       JOIN templates t ON t.id = v.template_id AND t.registered
       WHERE v.workspace_id = $1 ORDER BY v.template_id, v.version`,
      [ws],
    );
    a.counts.templates = templates.length;
    a.counts.templateVersions = versions.length;
    for (const t of templates) {
      const folder = `templates/${entryName(t.id)}`;
      zip.add(
        unique(`${folder}/template.json`),
        async function* (this: ExportProcess) {
          await this.progress(a, 'templates');
          yield json(t);
        }.bind(this),
      );
      for (const v of versions.filter((v) => v.template_id === t.id)) {
        zip.add(unique(`${folder}/versions/${v.version}.json`), () => this.templateVersion(a, t.id, v.version, 'json'));
        if (v.has_html)
          zip.add(unique(`${folder}/versions/${v.version}.html`), () =>
            this.templateVersion(a, t.id, v.version, 'html'),
          );
      }
    }

    const whole = (phase: ExportPhase, kind: string, sql: string) =>
      async function* (this: ExportProcess) {
        await this.progress(a, phase);
        const rows = await q(sql, [ws]);
        a.counts[kind] = rows.length;
        yield json(rows);
      }.bind(this);
    zip.add(
      unique('rules/rules.json'),
      whole(
        'rules',
        'rules',
        `SELECT id, address, name, description, enabled, match, conditions, actions, stop_processing AS "stopProcessing",
                position, created_at AS "createdAt", updated_at AS "updatedAt"
         FROM rules WHERE workspace_id = $1 ORDER BY address, position, id`,
      ),
    );
    zip.add(
      unique('labels/labels.json'),
      async function* (this: ExportProcess) {
        await this.progress(a, 'labels');
        a.counts.labels = labels.length;
        yield json(
          labels.map((l) => ({ id: l.id, address: l.address, name: l.name, color: l.color, createdAt: l.created_at })),
        );
      }.bind(this),
    );
    a.counts.notes = 0;
    zip.add(
      unique('addresses/addresses.json'),
      whole(
        'addresses',
        'addresses',
        `SELECT a.id, a.address, a.domain, a.enabled, a.time_zone AS "timeZone", a.username, a.created_at AS "createdAt",
                coalesce((SELECT json_agg(json_build_object('destination', f.destination, 'status', f.status,
                            'enabled', f.enabled, 'keepCopy', f.keep_copy) ORDER BY f.created_at)
                          FROM address_forwards f WHERE f.workspace_id = a.workspace_id AND f.address_id = a.id), '[]')
                  AS forwards
         FROM addresses a WHERE a.workspace_id = $1 AND a.registered ORDER BY a.address`,
      ),
    );

    zip.add(
      'manifest.json',
      async function* (this: ExportProcess) {
        await this.progress(a, 'manifest');
        yield json({
          object: 'workspace_export',
          exportId: a.id,
          workspaceId: ws,
          createdAt: new Date().toISOString(),
          counts: a.counts,
          entries: zip.entries,
        });
      }.bind(this),
    );
    zip.end();
    const stored = await this.deps.blobs.put(zip.output);
    return { sha256: stored.sha256, size: stored.size };
  }

  /** The threads of one mailbox that `where` picks, every message of each, as one mbox. */
  private async *mbox(a: Attempt, where: string, values: unknown[], counted: boolean): AsyncGenerator<Buffer> {
    if (counted) await this.progress(a, 'mail');
    let after = '';
    for (;;) {
      await this.check(a);
      const { rows: threads } = await this.deps.pool.query<{ id: string }>(
        `SELECT id FROM threads WHERE workspace_id = $1 AND ${where} AND id > $${values.length + 2}
         ORDER BY id LIMIT ${this.options.pageRows}`,
        [a.workspaceId, ...values, after],
      );
      if (threads.length === 0) return;
      const { rows: messages } = await this.deps.pool.query<{
        raw_sha256: string;
        mail_from: string;
        received_at: Date;
      }>(
        `SELECT raw_sha256, mail_from, received_at FROM thread_messages
         WHERE workspace_id = $1 AND thread_id = ANY($2) ORDER BY thread_id, position`,
        [a.workspaceId, threads.map((t) => t.id)],
      );
      for (const m of messages) {
        const raw = await this.deps.blobs.stream(m.raw_sha256);
        if (!raw) throw new Error(`the raw message ${m.raw_sha256} is missing from the blob store`);
        yield* mboxMessage(mboxFromLine(m.mail_from || null, m.received_at), raw);
        if (counted) this.count(a, 'messages');
      }
      after = threads.at(-1)!.id;
      if (counted) {
        a.threadsDone += threads.length;
        this.count(a, 'threads', threads.length);
        await this.progress(a, 'mail');
      }
    }
  }

  private async *contacts(a: Attempt): AsyncGenerator<string> {
    await this.progress(a, 'contacts');
    a.counts.contacts = 0;
    let after = '';
    for (;;) {
      await this.check(a);
      const { rows } = await this.deps.pool.query<{
        id: string;
        email: string;
        name: string | null;
        notes: string | null;
        attributes: Record<string, string>;
        updated_at: Date;
      }>(
        `SELECT id, email, name, notes, attributes, updated_at FROM contacts
         WHERE workspace_id = $1 AND id > $2 ORDER BY id LIMIT ${this.options.pageRows}`,
        [a.workspaceId, after],
      );
      if (rows.length === 0) return;
      yield rows.map((c) => vCard({ ...c, updatedAt: c.updated_at.toISOString() })).join('');
      this.count(a, 'contacts', rows.length);
      after = rows.at(-1)!.id;
    }
  }

  /** One audience and its members, as JSON written member page by member page. */
  private async *audience(a: Attempt, id: string): AsyncGenerator<string> {
    await this.progress(a, 'audiences');
    const { rows } = await this.deps.pool.query(
      `SELECT id, name, description, show_on_preferences AS "showOnPreferences", builtin, created_at AS "createdAt"
       FROM audiences WHERE workspace_id = $1 AND id = $2`,
      [a.workspaceId, id],
    );
    const head = JSON.stringify(rows[0] ?? { id }, null, 2);
    yield `${head.slice(0, -2)},\n  "members": [`;
    let after = '';
    let first = true;
    for (;;) {
      await this.check(a);
      // The page of memberships first, then each one's address by its key: with the join before the
      // limit the planner hashed every contact of the workspace for each page, so a page cost as
      // much as the workspace's contacts (96 ms at 57,000 of them; 11 ms this way, at any size).
      const { rows: page } = await this.deps.pool.query<{ contact_id: string; email: string | null; joined_at: Date }>(
        `SELECT m.contact_id, c.email, m.joined_at
         FROM (SELECT contact_id, joined_at FROM audience_members
               WHERE workspace_id = $1 AND audience_id = $2 AND left_at IS NULL AND contact_id > $3
               ORDER BY contact_id LIMIT ${this.options.pageRows}) m
         LEFT JOIN LATERAL (SELECT email FROM contacts WHERE workspace_id = $1 AND id = m.contact_id) c ON true
         ORDER BY m.contact_id`,
        [a.workspaceId, id, after],
      );
      if (page.length === 0) break;
      after = page.at(-1)!.contact_id;
      // A membership whose contact row is gone is not listed, as an inner join would leave it out.
      const members = page.filter((m) => m.email !== null);
      yield members
        .map((m) => {
          const line = JSON.stringify({ contactId: m.contact_id, email: m.email, joinedAt: m.joined_at });
          const text = `${first ? '' : ','}\n    ${line}`;
          first = false;
          return text;
        })
        .join('');
      this.count(a, 'audienceMembers', members.length);
    }
    yield first ? ']\n}\n' : '\n  ]\n}\n';
  }

  private async *templateVersion(a: Attempt, templateId: string, version: number, as: 'json' | 'html') {
    await this.check(a);
    const { rows } = await this.deps.pool.query<Record<string, unknown> & { html: string | null }>(
      `SELECT id, version, published, engine, subject, document, html, slots, props, restored_from AS "restoredFrom",
              created_at AS "createdAt", published_at AS "publishedAt"
       FROM template_versions WHERE workspace_id = $1 AND template_id = $2 AND version = $3`,
      [a.workspaceId, templateId, version],
    );
    const row = rows[0];
    if (!row) throw new Error(`version ${version} of ${templateId} is gone`);
    if (as === 'html') yield row.html ?? '';
    else {
      const { html: _html, ...rest } = row;
      yield json({ templateId, ...rest, hasHtml: row.html !== null });
    }
  }

  /** One pass of the retention: the zips of exports past their expiry are deleted, each recorded once. */
  private async deleteExpired(): Promise<number> {
    const { rows } = await this.deps.pool.query<{ id: string; workspace_id: string; sha256: string }>(
      `SELECT id, workspace_id, sha256 FROM export_runs
       WHERE sha256 IS NOT NULL AND NOT file_deleted AND expires_at <= now() ORDER BY expires_at LIMIT 100`,
    );
    for (const run of rows) {
      await this.deps.blobs.delete(run.sha256);
      const actor: Actor = { workspaceId: run.workspace_id, kind: 'system', id: run.id };
      await recordExportFileDeleted(this.deps.commands, actor, run.id, new Date().toISOString());
      await this.deps.pool.query('UPDATE export_runs SET file_deleted = true WHERE id = $1', [run.id]);
    }
    return rows.length === 100 ? 0 : this.options.retentionEveryMs;
  }
}
