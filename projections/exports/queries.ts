import { sql, type Kysely, type Selectable } from 'kysely';
import type { ReadModels } from '../tables.ts';
import type { ExportsTables } from './tables.ts';

type Db = Kysely<ReadModels>;

export type ExportRow = Selectable<ExportsTables['exports']>;

export function findExport(db: Db, workspaceId: string, id: string): Promise<ExportRow | undefined> {
  return db
    .selectFrom('exports')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/** A page by offset, newest first, and how many there are in all. */
export async function listExports(
  db: Db,
  workspaceId: string,
  page: { limit: number; offset: number },
): Promise<{ rows: ExportRow[]; total: number }> {
  const [rows, total] = await Promise.all([
    db
      .selectFrom('exports')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(page.limit)
      .offset(page.offset)
      .execute(),
    db
      .selectFrom('exports')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('workspace_id', '=', workspaceId)
      .executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(total.n) };
}

/** The export queued or running, and when the latest that did not fail was asked for (the daily limit's start). */
export async function exportStanding(
  db: Db,
  workspaceId: string,
): Promise<{ activeId: string | null; lastAt: Date | null }> {
  const { rows } = await sql<{ active_id: string | null; last_at: Date | null }>`
    SELECT (SELECT id FROM exports WHERE workspace_id = ${workspaceId} AND status IN ('queued', 'running')
              ORDER BY created_at DESC LIMIT 1) AS active_id,
           (SELECT max(created_at) FROM exports WHERE workspace_id = ${workspaceId} AND status <> 'failed') AS last_at`.execute(
    db,
  );
  return { activeId: rows[0]?.active_id ?? null, lastAt: rows[0]?.last_at ?? null };
}

export interface ExportPreviewCounts {
  threads: number;
  attachments: number;
  attachmentBytes: number;
  deletedFiles: number;
  contacts: number;
  audiences: number;
  calendarEvents: number;
  templates: number;
  rules: number;
  labels: number;
  notes: number;
  addresses: number;
}

/**
 * What an export of the workspace would hold now, from the read models. Calendar events and notes
 * are kept by no part of the service yet: 0. `deletedFiles` are the attachments of threads in the trash.
 */
export async function exportPreviewCounts(db: Db, workspaceId: string): Promise<ExportPreviewCounts> {
  const { rows } = await sql<Record<keyof ExportPreviewCounts, string>>`SELECT
      (SELECT count(*) FROM threads WHERE workspace_id = ${workspaceId}) AS threads,
      (SELECT count(*) FROM files WHERE workspace_id = ${workspaceId} AND source = 'attachment') AS attachments,
      (SELECT coalesce(sum(size), 0) FROM files WHERE workspace_id = ${workspaceId} AND source = 'attachment')
        AS "attachmentBytes",
      (SELECT count(*) FROM files f JOIN threads t ON t.workspace_id = f.workspace_id AND t.id = f.thread_id
        WHERE f.workspace_id = ${workspaceId} AND f.source = 'attachment' AND t.label = 'trash') AS "deletedFiles",
      (SELECT count(*) FROM contacts WHERE workspace_id = ${workspaceId}) AS contacts,
      (SELECT count(*) FROM audiences WHERE workspace_id = ${workspaceId}) AS audiences,
      0 AS "calendarEvents",
      (SELECT count(*) FROM templates WHERE workspace_id = ${workspaceId} AND registered) AS templates,
      (SELECT count(*) FROM rules WHERE workspace_id = ${workspaceId}) AS rules,
      (SELECT count(*) FROM labels WHERE workspace_id = ${workspaceId}) AS labels,
      0 AS notes,
      (SELECT count(*) FROM addresses WHERE workspace_id = ${workspaceId} AND registered) AS addresses`.execute(db);
  const row = rows[0]!;
  return Object.fromEntries(Object.entries(row).map(([k, v]) => [k, Number(v)])) as unknown as ExportPreviewCounts;
}
