import { sql, type Kysely } from 'kysely';
import { indexOptionOnce } from '../index-options.ts';
import { defineProjector, type BulkLoad, type Projected } from '../projector.ts';
import type { SuppressionsTables } from './tables.ts';

const table = (s: string, id: string) => `
    CREATE TABLE IF NOT EXISTS ${s}.suppressions (
      workspace_id text NOT NULL,
      id uuid ${id},
      email text NOT NULL,
      reason text NOT NULL,
      detail text,
      removable boolean NOT NULL,
      created_at timestamptz NOT NULL
    );`;

type Db = Kysely<SuppressionsTables>;
type Event = Projected<'SuppressionAdded' | 'SuppressionRemoved'>;

// Rows travel as one JSON text: serialising that is several times cheaper than array literals.
function insertAdds(db: Db, adds: Iterable<Projected<'SuppressionAdded'>>) {
  const rows = [];
  for (const {
    metadata: { workspaceId },
    data: d,
  } of adds)
    rows.push([workspaceId, d.suppressionId, d.email, d.reason, d.detail, d.removable, d.createdAt]);
  return sql`INSERT INTO suppressions (workspace_id, id, email, reason, detail, removable, created_at)
    SELECT r->>0, (r->>1)::uuid, r->>2, r->>3, r->>4, (r->>5)::boolean, (r->>6)::timestamptz
    FROM jsonb_array_elements(${JSON.stringify(rows)}::jsonb) r ON CONFLICT (id) DO NOTHING`.execute(db);
}

/**
 * A rebuild's replay in SQL, without the primary key, which is built once at the end beside the
 * other indexes: the random ids make keeping it row by row cost more than everything else the
 * load does. Removals are gathered first (indexed, so an add's lookup stays cheap whatever plan a
 * statement prepared over an empty table keeps), so each add is kept unless its own workspace removed
 * its id later in the log: the rows applying every event in order leaves. It rests on what the
 * domain guarantees (commands/suppressions: each add draws a new id): an id is added once. Were
 * one added twice with no removal between, the key refuses the rebuild (the live table keeps the
 * first add) rather than let it differ.
 */
const bulkLoad: BulkLoad = {
  versions: { SuppressionAdded: 1, SuppressionRemoved: 1 },
  ddl: (s) => `${table(s, 'NOT NULL')}
    CREATE UNLOGGED TABLE ${s}.suppressions_removed (workspace_id text NOT NULL, id uuid NOT NULL, position bigint NOT NULL);
    CREATE INDEX ON ${s}.suppressions_removed (id);`,
  prepare: (events) => sql`INSERT INTO suppressions_removed
    SELECT e.metadata->>'workspaceId', (e.data->>'suppressionId')::uuid, e.position
    FROM ${events} e WHERE e.type = 'SuppressionRemoved'`,
  load: (events) => sql`INSERT INTO suppressions (workspace_id, id, email, reason, detail, removable, created_at)
    SELECT e.metadata->>'workspaceId', (e.data->>'suppressionId')::uuid, e.data->>'email', e.data->>'reason',
           e.data->>'detail', (e.data->>'removable')::boolean, (e.data->>'createdAt')::timestamptz
    FROM ${events} e
    WHERE e.type = 'SuppressionAdded'
      AND NOT EXISTS (SELECT 1 FROM suppressions_removed r
        WHERE r.id = (e.data->>'suppressionId')::uuid AND r.workspace_id = e.metadata->>'workspaceId' AND r.position > e.position)`,
  keys: (s) => `CREATE UNIQUE INDEX suppressions_pkey ON ${s}.suppressions (id);`,
  finish: (s) => `
    ALTER TABLE ${s}.suppressions ADD CONSTRAINT suppressions_pkey PRIMARY KEY USING INDEX suppressions_pkey;
    DROP TABLE ${s}.suppressions_removed;`,
};

/** The trigram indexes' pending list, in kB (PostgreSQL's default is 4 MB). */
const PENDING_LIST_KB = 256;
const TRIGRAM_INDEXES = ['suppressions_email_search', 'suppressions_detail_search'] as const;

/**
 * The workspace's suppression list. The newest-first index serves the keyset pages; the trigram
 * index (pg_trgm, installed by the migration in system.ts) serves `q`, a substring search.
 */
export const suppressionsProjector = defineProjector<SuppressionsTables>()({
  name: 'suppressions',
  version: 2,
  tables: ['suppressions'],
  ddl: (s) =>
    table(s, 'PRIMARY KEY') +
    TRIGRAM_INDEXES.map((index) => indexOptionOnce(s, index, 'gin_pending_list_limit', PENDING_LIST_KB)).join(''),
  // A trigram index per column (the search ORs them, a BitmapOr): a rebuild builds the two at once,
  // where one index of both columns was a single build of 13 s over a million rows that nothing
  // ran beside. The address's first: the longest build, with the btrees after the detail's.
  // Their pending lists hold 256 kB, not 4 MB: the insert that finds a list full moves it into
  // the index, and at 4 MB that took the projector's batch 25-45 ms every few seconds, which
  // every write waiting for this read model waited out (docs/decisions/suppressions.md).
  indexes: (s) => `
    CREATE INDEX IF NOT EXISTS ${TRIGRAM_INDEXES[0]} ON ${s}.suppressions USING gin (email gin_trgm_ops)
      WITH (gin_pending_list_limit = ${PENDING_LIST_KB});
    CREATE INDEX IF NOT EXISTS ${TRIGRAM_INDEXES[1]} ON ${s}.suppressions USING gin (detail gin_trgm_ops)
      WITH (gin_pending_list_limit = ${PENDING_LIST_KB});
    CREATE UNIQUE INDEX IF NOT EXISTS suppressions_workspace_email ON ${s}.suppressions (workspace_id, email);
    CREATE INDEX IF NOT EXISTS suppressions_workspace_created ON ${s}.suppressions (workspace_id, created_at DESC, id DESC);
    CREATE INDEX IF NOT EXISTS suppressions_workspace_reason_created ON ${s}.suppressions (workspace_id, reason, created_at DESC, id DESC);`,
  bulkLoad,
  pipelined: true,
  on: {
    SuppressionAdded: async (db, { metadata: { workspaceId }, data: d }) => {
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
    },
    SuppressionRemoved: async (db, { metadata: { workspaceId }, data: d }) => {
      await db
        .deleteFrom('suppressions')
        .where('workspace_id', '=', workspaceId)
        .where('id', '=', d.suppressionId)
        .execute();
    },
  },
  applyBatch,
});

async function applyBatch(db: Db, events: Event[]): Promise<void> {
  // A batch comes down to one delete and one insert. Per id, in order: an add counts only when
  // the id is absent (the first add wins, as ON CONFLICT DO NOTHING does), and a remove deletes
  // the row and drops an add of the same id earlier in the batch. Deletes go first, so an address
  // removed and added again under a new id never meets its old row in the unique index.
  let adds = new Map<string, Projected<'SuppressionAdded'>>();
  let removed: [workspaceId: string, id: string][] = [];
  const flush = async () => {
    if (removed.length > 0) {
      await sql`DELETE FROM suppressions s USING jsonb_array_elements(${JSON.stringify(removed)}::jsonb) r
        WHERE s.workspace_id = r->>0 AND s.id = (r->>1)::uuid`.execute(db);
    }
    if (adds.size > 0) await insertAdds(db, adds.values());
    adds = new Map();
    removed = [];
  };
  for (const e of events) {
    const id = e.data.suppressionId;
    if (e.type === 'SuppressionAdded') {
      if (!adds.has(id)) adds.set(id, e);
    } else if (e.type === 'SuppressionRemoved') {
      const add = adds.get(id);
      // An add of that id from another workspace took effect only if the id was absent, which the
      // table knows: write what came before, then go on.
      if (add && add.metadata.workspaceId !== e.metadata.workspaceId) await flush();
      else if (add) adds.delete(id);
      removed.push([e.metadata.workspaceId, id]);
    }
  }
  await flush();
}
