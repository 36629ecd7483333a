import { sql, type Kysely, type Selectable } from 'kysely';
import { type Reach, withinReach } from '../addresses/queries.ts';
import type { ReadModels } from '../tables.ts';
import type { EmailStatus, EmailsTables } from './tables.ts';

type Db = Kysely<ReadModels>;

export type EmailRow = Selectable<EmailsTables['emails']>;
export type EmailRecipientRow = Selectable<EmailsTables['email_recipients']>;
export type EmailHistoryRow = Selectable<EmailsTables['email_history']>;

export interface EmailFilter {
  status?: EmailStatus;
  /** The sending address, lower-case. */
  from?: string;
  tag?: { name: string; value?: string };
  /** Sent with this template (its `tpl_` id), and with this version of it (`tplv_` id) when given. */
  template?: { id: string; versionId?: string };
  /** A narrowed credential's lists: mail from the addresses and domains it holds. */
  reach: Reach | null;
}

export async function findEmail(
  db: Db,
  workspaceId: string,
  reach: Reach | null,
  id: string,
): Promise<EmailRow | undefined> {
  const { rows } = await sql<EmailRow>`SELECT e.* FROM emails e
    WHERE e.workspace_id = ${workspaceId} AND e.id = ${id} ${withinReach(reach, 'e.from_email', 'e.from_domain')}`.execute(
    db,
  );
  return rows[0];
}

/** Newest first, after the cursor's (createdAt, id). */
export async function listEmails(
  db: Db,
  workspaceId: string,
  filter: EmailFilter,
  limit: number,
  after: [string, string] | null,
): Promise<EmailRow[]> {
  const tag =
    filter.tag === undefined
      ? sql``
      : sql`AND e.tags @> ${JSON.stringify([filter.tag.value === undefined ? { name: filter.tag.name } : filter.tag])}::jsonb`;
  const { rows } = await sql<EmailRow>`SELECT e.* FROM emails e
    WHERE e.workspace_id = ${workspaceId}
      ${filter.status === undefined ? sql`` : sql`AND e.status = ${filter.status}`}
      ${filter.from === undefined ? sql`` : sql`AND e.from_email = ${filter.from}`}
      ${filter.template === undefined ? sql`` : sql`AND e.template_id = ${filter.template.id}`}
      ${filter.template?.versionId === undefined ? sql`` : sql`AND e.template_version_id = ${filter.template.versionId}`}
      ${tag} ${withinReach(filter.reach, 'e.from_email', 'e.from_domain')}
      ${after === null ? sql`` : sql`AND (e.created_at, e.id) < (${after[0]}::timestamptz, ${after[1]})`}
    ORDER BY e.created_at DESC, e.id DESC LIMIT ${limit + 1}`.execute(db);
  return rows;
}

/** The recipients of some messages, in each message's order. */
export async function recipientsOf(db: Db, emailIds: string[]): Promise<EmailRecipientRow[]> {
  if (emailIds.length === 0) return [];
  return db
    .selectFrom('email_recipients')
    .selectAll()
    .where('email_id', 'in', emailIds)
    .orderBy('email_id')
    .orderBy('position')
    .execute();
}

/** A message's events, oldest first. */
export async function historyOf(db: Db, emailId: string): Promise<EmailHistoryRow[]> {
  return db.selectFrom('email_history').selectAll().where('email_id', '=', emailId).orderBy('position').execute();
}
