import { sql, type Kysely, type Selectable } from 'kysely';
import type { AutomationsTables } from './tables.ts';
import type { ReadModels } from '../tables.ts';

/** Also reads the tables of automation enrolment (processes/automations/enrol.ts), in raw SQL. */
type Db = Kysely<ReadModels>;

export type AutomationRow = Selectable<AutomationsTables['automations']>;

export async function findAutomation(db: Db, workspaceId: string, id: string): Promise<AutomationRow | undefined> {
  const { rows } =
    await sql<AutomationRow>`SELECT * FROM automations WHERE workspace_id = ${workspaceId} AND id = ${id}`.execute(db);
  return rows[0];
}

/** Newest first; `after` is the (createdAt, id) of the last row shown. */
export async function listAutomations(
  db: Db,
  workspaceId: string,
  options: { status?: 'live' | 'paused'; limit: number; after: [string, string] | null },
): Promise<AutomationRow[]> {
  const { rows } = await sql<AutomationRow>`SELECT * FROM automations WHERE workspace_id = ${workspaceId}
    ${options.status ? sql`AND status = ${options.status}` : sql``}
    ${options.after ? sql`AND (created_at, id) < (${options.after[0]}::timestamptz, ${options.after[1]})` : sql``}
    ORDER BY created_at DESC, id DESC LIMIT ${options.limit + 1}`.execute(db);
  return rows;
}

/** Sends the automations recorded for a contact event's runs, newest first (`GET /automations/{id}/sends`). */
export interface SendRow {
  id: string;
  automation_id: string;
  run_id: string;
  contact_id: string;
  email: string;
  template: string;
  subject: string | null;
  data: Record<string, unknown>;
  created_at: Date;
  from_address: string | null;
  email_id: string | null;
  refusal_code: string | null;
  refusal_message: string | null;
  sent_at: Date | null;
}

export async function listSends(
  db: Db,
  workspaceId: string,
  automationId: string,
  limit: number,
  after: [string, string] | null,
): Promise<SendRow[]> {
  const { rows } =
    await sql<SendRow>`SELECT * FROM automation_sends WHERE workspace_id = ${workspaceId} AND automation_id = ${automationId}
    ${after ? sql`AND (created_at, id) < (${after[0]}::timestamptz, ${after[1]})` : sql``}
    ORDER BY created_at DESC, id DESC LIMIT ${limit + 1}`.execute(db);
  return rows;
}

export interface RunRow {
  id: string;
  automation_id: string;
  contact_id: string;
  email: string;
  status: string;
  pc: number;
  wait_event: string | null;
  wake_at: Date | null;
  enrolled_at: Date;
  completed_at: Date | null;
}

export async function listRuns(
  db: Db,
  workspaceId: string,
  automationId: string,
  limit: number,
  after: [string, string] | null,
): Promise<RunRow[]> {
  const { rows } =
    await sql<RunRow>`SELECT id, automation_id, contact_id, email, status, pc, wait_event, wake_at, enrolled_at, completed_at
    FROM automation_runs WHERE workspace_id = ${workspaceId} AND automation_id = ${automationId}
    ${after ? sql`AND (enrolled_at, id) < (${after[0]}::timestamptz, ${after[1]})` : sql``}
    ORDER BY enrolled_at DESC, id DESC LIMIT ${limit + 1}`.execute(db);
  return rows;
}

/** What enrolment (processes/automations/enrol.ts) made of some events; absent: nothing. */
export async function outcomesOf(
  db: Db,
  eventIds: string[],
): Promise<Map<string, { enrolled: string[]; resumed: number }>> {
  if (eventIds.length === 0) return new Map();
  const { rows } = await sql<{
    event_id: string;
    enrolled: string[];
    resumed: number;
  }>`SELECT event_id, enrolled, resumed FROM automation_event_outcomes
    WHERE event_id = ANY(${eventIds})`.execute(db);
  return new Map(rows.map((r) => [r.event_id, { enrolled: r.enrolled, resumed: r.resumed }]));
}
