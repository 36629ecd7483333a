import { sql } from 'kysely';
import type { Projector } from '../projector.ts';

/**
 * The workspace's suppression list. The newest-first index serves the keyset pages; the trigram
 * index (pg_trgm, installed by the migration in system.ts) serves `q`, a substring search.
 */
export const suppressionsProjector: Projector = {
  name: 'suppressions',
  version: 1,
  tables: ['suppressions'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.suppressions (
      workspace_id text NOT NULL,
      id uuid PRIMARY KEY,
      email text NOT NULL,
      reason text NOT NULL,
      detail text,
      removable boolean NOT NULL,
      created_at timestamptz NOT NULL
    );`,
  indexes: (s) => `
    CREATE UNIQUE INDEX IF NOT EXISTS suppressions_workspace_email ON ${s}.suppressions (workspace_id, email);
    CREATE INDEX IF NOT EXISTS suppressions_workspace_created ON ${s}.suppressions (workspace_id, created_at DESC, id DESC);
    CREATE INDEX IF NOT EXISTS suppressions_workspace_reason_created ON ${s}.suppressions (workspace_id, reason, created_at DESC, id DESC);
    CREATE INDEX IF NOT EXISTS suppressions_search ON ${s}.suppressions USING gin (email gin_trgm_ops, detail gin_trgm_ops);`,
  handles: ['SuppressionAdded', 'SuppressionRemoved'],
  async apply(db, event) {
    const workspaceId = event.metadata.workspaceId as string;
    const d = event.data as any;
    switch (event.type) {
      case 'SuppressionAdded':
        await db
          .insertInto('suppressions')
          .values({
            workspace_id: workspaceId,
            id: d.suppressionId,
            email: d.email,
            reason: d.reason,
            detail: d.detail,
            removable: d.removable,
            created_at: d.createdAt,
          })
          .onConflict((oc) => oc.column('id').doNothing())
          .execute();
        break;
      case 'SuppressionRemoved':
        await db.deleteFrom('suppressions').where('workspace_id', '=', workspaceId).where('id', '=', d.suppressionId).execute();
        break;
    }
  },
  async applyBatch(db, events) {
    // Runs of one type keep the order (an add, a remove and an add again of one address).
    for (let i = 0; i < events.length; ) {
      let j = i;
      while (j < events.length && events[j]!.type === events[i]!.type && j - i < 5000) j++;
      const run = events.slice(i, j);
      if (run[0]!.type === 'SuppressionAdded') {
        const col = (f: (d: any, e: (typeof run)[number]) => unknown) => run.map((e) => f(e.data as any, e));
        await db
          .insertInto('suppressions')
          .columns(['workspace_id', 'id', 'email', 'reason', 'detail', 'removable', 'created_at'])
          .expression(
            sql`SELECT * FROM unnest(${col((_, e) => e.metadata.workspaceId)}::text[], ${col((d) => d.suppressionId)}::uuid[],
              ${col((d) => d.email)}::text[], ${col((d) => d.reason)}::text[], ${col((d) => d.detail)}::text[],
              ${col((d) => d.removable)}::boolean[], ${col((d) => d.createdAt)}::timestamptz[])`,
          )
          .onConflict((oc) => oc.column('id').doNothing())
          .execute();
      } else {
        for (const event of run) await this.apply(db, event);
      }
      i = j;
    }
  },
};
