import { sql } from 'kysely';
import { domainOf } from '../../domain/shared/allowlists.ts';
import { defineProjector } from '../projector.ts';
import type { RulesTables } from './tables.ts';

/**
 * Rules as lists and reads show them, with what their runs add: `match_count` and
 * `last_matched_at`. A run is counted once (its row is the mark), and its row stays when the rule
 * goes: the run history survives.
 */
export const rulesProjector = defineProjector<RulesTables>()({
  name: 'rules',
  version: 1,
  tables: ['rules', 'rule_runs'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.rules (
      id text PRIMARY KEY,
      workspace_id text NOT NULL,
      address text COLLATE "C" NOT NULL,
      address_id text,
      domain_id text NOT NULL,
      domain text NOT NULL,
      name text NOT NULL,
      description text,
      enabled boolean NOT NULL,
      match text NOT NULL,
      conditions jsonb NOT NULL,
      actions jsonb NOT NULL,
      stop_processing boolean NOT NULL,
      position integer NOT NULL,
      last_matched_at timestamptz,
      match_count integer NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    );
    -- One row per recorded run: what makes a run count once in match_count when it is applied again.
    CREATE TABLE IF NOT EXISTS ${s}.rule_runs (
      id text PRIMARY KEY,
      workspace_id text NOT NULL,
      address text NOT NULL,
      rule_ids text[] NOT NULL,
      thread_id text,
      message_id text,
      rejected boolean NOT NULL,
      at timestamptz NOT NULL
    );`,
  indexes: (s) => `
    CREATE INDEX IF NOT EXISTS rules_order ON ${s}.rules (workspace_id, address, position, created_at, id);`,
  on: {
    RuleCreated: async (db, { metadata: { workspaceId }, data: d }) => {
      await sql`INSERT INTO rules (id, workspace_id, address, address_id, domain_id, domain, name, description, enabled,
          match, conditions, actions, stop_processing, position, created_at, updated_at)
        VALUES (${d.ruleId}, ${workspaceId}, ${d.mailbox.address}, ${d.mailbox.addressId}, ${d.mailbox.domainId},
          ${domainOf(d.mailbox.address)}, ${d.name}, ${d.description}, ${d.enabled}, ${d.match},
          ${JSON.stringify(d.conditions)}, ${JSON.stringify(d.actions)}, ${d.stopProcessing}, ${d.position},
          ${d.createdAt}, ${d.createdAt})
        ON CONFLICT (id) DO NOTHING`.execute(db);
    },
    RuleUpdated: async (db, { data: d }) => {
      await sql`UPDATE rules SET name = ${d.name}, description = ${d.description}, enabled = ${d.enabled},
          match = ${d.match}, conditions = ${JSON.stringify(d.conditions)}, actions = ${JSON.stringify(d.actions)},
          stop_processing = ${d.stopProcessing}, position = ${d.position}, updated_at = ${d.updatedAt}
        WHERE id = ${d.ruleId}`.execute(db);
    },
    RuleDeleted: async (db, { data: d }) => {
      await sql`DELETE FROM rules WHERE id = ${d.ruleId}`.execute(db);
    },
    RulesReordered: async (db, { metadata: { workspaceId }, data: d }) => {
      await sql`UPDATE rules SET position = o.position - 1, updated_at = ${d.at}
        FROM unnest(${d.ruleIds}::text[]) WITH ORDINALITY AS o(id, position)
        WHERE rules.id = o.id AND rules.workspace_id = ${workspaceId}`.execute(db);
    },
    RuleRunRecorded: async (db, { metadata: { workspaceId }, data: d }) => {
      const ruleIds = d.matched.map((m) => m.ruleId);
      await sql`WITH run AS (
          INSERT INTO rule_runs (id, workspace_id, address, rule_ids, thread_id, message_id, rejected, at)
          VALUES (${d.runId}, ${workspaceId}, ${d.mailbox}, ${ruleIds}::text[], ${d.threadId}, ${d.messageId}, ${d.rejected}, ${d.at})
          ON CONFLICT (id) DO NOTHING RETURNING id)
        UPDATE rules SET match_count = match_count + 1,
          last_matched_at = GREATEST(last_matched_at, ${d.at}::timestamptz)
        WHERE id = ANY(${ruleIds}::text[]) AND workspace_id = ${workspaceId} AND EXISTS (SELECT 1 FROM run)`.execute(
        db,
      );
    },
  },
});
