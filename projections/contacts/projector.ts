import { sql, type Kysely } from 'kysely';
import { defineProjector, type Projected } from '../projector.ts';
import type { ContactsTables } from './tables.ts';

type Db = Kysely<ContactsTables>;

/**
 * The contact book, the audiences and the membership history. `audience_members` holds one row
 * per stay of a contact in an audience (joined_at, left_at null while it lasts), so growth for any
 * past window is counted from it; `audiences.member_count` is the live count, kept in the same
 * transaction, so a fresh `contactCount` and the growth totals cost one row read.
 *
 * Counting each person once over several custom audiences (growth's `totals.contacts`) would
 * otherwise deduplicate all their members: `contact_audience_sets` keeps the custom audiences each
 * contact is in now (sorted ids; no row when none), and `audience_set_counts` how many contacts of
 * a workspace have each such set, so the contacts in any selection is a sum over the few sets that
 * meet it. The default audience is left out: it holds everyone, so growth answers from its total.
 *
 * `audience_tombstones` keeps where a deleted audience stood in the list (its createdAt): the
 * list's cursor is an audience id (spec), and a walk whose cursor audience was deleted between
 * pages goes on from that place.
 */
export const contactsProjector = defineProjector<ContactsTables>()({
  name: 'contacts',
  version: 7,
  tables: [
    'contacts',
    'audiences',
    'audience_tombstones',
    'audience_members',
    'audience_member_hours',
    'audience_member_days',
    'contact_audience_sets',
    'audience_set_counts',
  ],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.contacts (
      workspace_id text NOT NULL,
      id text PRIMARY KEY,
      email text NOT NULL,
      name text,
      notes text,
      attributes jsonb NOT NULL,
      source text NOT NULL,
      last_seen_at timestamptz,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      -- The words of the address and the name (runs of letters and digits, lower-cased) for \`q\`.
      search tsvector GENERATED ALWAYS AS (
        array_to_tsvector(array_remove(regexp_split_to_array(lower(email || ' ' || coalesce(name, '')), '[^[:alnum:]]+'), ''))
      ) STORED
    );
    CREATE TABLE IF NOT EXISTS ${s}.audiences (
      workspace_id text NOT NULL,
      id text PRIMARY KEY,
      name text NOT NULL,
      description text,
      show_on_preferences boolean NOT NULL,
      builtin text,
      member_count integer NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    );
    CREATE TABLE IF NOT EXISTS ${s}.audience_tombstones (
      workspace_id text NOT NULL,
      id text PRIMARY KEY,
      created_at timestamptz NOT NULL
    );
    CREATE TABLE IF NOT EXISTS ${s}.audience_members (
      workspace_id text NOT NULL,
      audience_id text NOT NULL,
      contact_id text NOT NULL,
      joined_at timestamptz NOT NULL,
      left_at timestamptz,
      PRIMARY KEY (audience_id, contact_id, joined_at)
    );
    -- Joins and leaves per audience and UTC hour: long growth windows add these up instead of rows.
    CREATE TABLE IF NOT EXISTS ${s}.audience_member_hours (
      audience_id text NOT NULL,
      hour timestamp NOT NULL,
      joins integer NOT NULL,
      leaves integer NOT NULL,
      PRIMARY KEY (audience_id, hour)
    );
    -- The same per UTC day: long day-grain windows without an offset.
    CREATE TABLE IF NOT EXISTS ${s}.audience_member_days (
      audience_id text NOT NULL,
      day timestamp NOT NULL,
      joins integer NOT NULL,
      leaves integer NOT NULL,
      PRIMARY KEY (audience_id, day)
    );
    CREATE TABLE IF NOT EXISTS ${s}.contact_audience_sets (
      contact_id text PRIMARY KEY,
      workspace_id text NOT NULL,
      audience_ids text[] NOT NULL
    );
    CREATE TABLE IF NOT EXISTS ${s}.audience_set_counts (
      workspace_id text NOT NULL,
      audience_ids text[] NOT NULL,
      contacts integer NOT NULL,
      PRIMARY KEY (workspace_id, audience_ids)
    );`,
  indexes: (s) => `
    CREATE UNIQUE INDEX IF NOT EXISTS contacts_workspace_email ON ${s}.contacts (workspace_id, email);
    CREATE INDEX IF NOT EXISTS contacts_workspace_seen ON ${s}.contacts (workspace_id, (coalesce(last_seen_at, '-infinity'::timestamptz)) DESC, id DESC);
    CREATE INDEX IF NOT EXISTS contacts_workspace_source_seen ON ${s}.contacts (workspace_id, source, (coalesce(last_seen_at, '-infinity'::timestamptz)) DESC, id DESC);
    CREATE INDEX IF NOT EXISTS contacts_search ON ${s}.contacts USING gin (search);
    CREATE INDEX IF NOT EXISTS audiences_workspace_created ON ${s}.audiences (workspace_id, created_at DESC, id DESC);
    CREATE INDEX IF NOT EXISTS audience_members_joined ON ${s}.audience_members (audience_id, joined_at);
    CREATE INDEX IF NOT EXISTS audience_members_left ON ${s}.audience_members (audience_id, left_at) WHERE left_at IS NOT NULL;
    CREATE INDEX IF NOT EXISTS audience_members_open ON ${s}.audience_members (contact_id) WHERE left_at IS NULL;
    CREATE INDEX IF NOT EXISTS contact_audience_sets_ids ON ${s}.contact_audience_sets USING gin (audience_ids);`,
  on: {
    ContactCreated: createContact,
    ContactUpdated: async (db, { metadata: { workspaceId }, data: d }) => {
      await db
        .updateTable('contacts')
        .set({ name: d.name, notes: d.notes, attributes: JSON.stringify(d.attributes), updated_at: d.updatedAt })
        .where('workspace_id', '=', workspaceId)
        .where('id', '=', d.contactId)
        .execute();
    },
    ContactSeen: async (db, { metadata: { workspaceId }, data: d }) => {
      await db
        .updateTable('contacts')
        .set({ last_seen_at: d.seenAt })
        .where('workspace_id', '=', workspaceId)
        .where('id', '=', d.contactId)
        .execute();
    },
    ContactDeleted: deleteContact,
    ContactJoinedAudience: async (db, { metadata: { workspaceId }, data: d }) => {
      if (await join(db, workspaceId, d.audienceId, d.contactId, d.joinedAt))
        await regroup(db, workspaceId, d.contactId, [d.audienceId], []);
    },
    ContactLeftAudience: leaveAudience,
    AudienceCreated: async (db, { metadata: { workspaceId }, data: d }) => {
      await db
        .insertInto('audiences')
        .values({
          workspace_id: workspaceId,
          id: d.audienceId,
          name: d.name,
          description: d.description,
          show_on_preferences: d.showOnPreferences,
          builtin: d.builtin,
          member_count: 0,
          created_at: d.createdAt,
          updated_at: d.createdAt,
        })
        .onConflict((oc) => oc.doNothing())
        .execute();
    },
    AudienceUpdated: async (db, { metadata: { workspaceId }, data: d }) => {
      await db
        .updateTable('audiences')
        .set({
          name: d.name,
          description: d.description,
          show_on_preferences: d.showOnPreferences,
          updated_at: d.updatedAt,
        })
        .where('workspace_id', '=', workspaceId)
        .where('id', '=', d.audienceId)
        .execute();
    },
    AudienceDeleted: deleteAudience,
  },
  // An import (or a busy sign-up form) creates contacts by the hundred: a run of them is a few
  // statements instead of ten round trips a contact.
  onRun: { ContactCreated: createContacts },
});

async function createContact(
  db: Db,
  { metadata: { workspaceId }, data: d }: Projected<'ContactCreated'>,
): Promise<void> {
  await db
    .insertInto('contacts')
    .values({
      workspace_id: workspaceId,
      id: d.contactId,
      email: d.email,
      name: d.name,
      notes: d.notes,
      attributes: JSON.stringify(d.attributes),
      source: d.source,
      last_seen_at: null,
      created_at: d.createdAt,
      updated_at: d.createdAt,
    })
    .onConflict((oc) => oc.doNothing())
    .execute();
  const joined: string[] = [];
  for (const audienceId of d.audienceIds)
    if (await join(db, workspaceId, audienceId, d.contactId, d.createdAt)) joined.push(audienceId);
  if (joined.length > 0) await regroup(db, workspaceId, d.contactId, joined, []);
}

/**
 * A run of ContactCreated in a row, as `createContact` on each in turn does it, in one statement:
 * the rows, the memberships (an audience gone, or another workspace's, joins nothing; each counted
 * once by the hour and the day), and each new member's set of custom audiences. Memberships are
 * made for the contacts the insert made only: a contact already there (the run handed over again)
 * had its memberships made with its row, in the same transaction. So no open membership can stand
 * in the way, nor a set of audiences (a contact's set goes with its last membership), and neither
 * is looked for. A contact twice in the run (never from the commands, which create an address
 * once) takes the one-by-one path.
 */
async function createContacts(db: Db, events: Projected<'ContactCreated'>[]): Promise<void> {
  if (new Set(events.map((e) => e.data.contactId)).size < events.length) {
    for (const e of events) await createContact(db, e);
    return;
  }
  const contacts = events.map(({ metadata: { workspaceId }, data: d }) => [
    workspaceId,
    d.contactId,
    d.email,
    d.name,
    d.notes,
    d.attributes,
    d.source,
    d.createdAt,
    [...new Set(d.audienceIds)],
  ]);
  await sql`
    WITH given AS (
      SELECT r FROM jsonb_array_elements(${JSON.stringify(contacts)}::jsonb) r
    ), made AS (
      INSERT INTO contacts (workspace_id, id, email, name, notes, attributes, source, last_seen_at, created_at, updated_at)
      SELECT r->>0, r->>1, r->>2, r->>3, r->>4, r->5, r->>6, NULL, (r->>7)::timestamptz, (r->>7)::timestamptz FROM given
      ON CONFLICT DO NOTHING
      RETURNING workspace_id, id, created_at
    ), joined AS (
      INSERT INTO audience_members (workspace_id, audience_id, contact_id, joined_at)
      SELECT m.workspace_id, a.id, m.id, m.created_at
      FROM given g JOIN made m ON m.id = g.r->>1
      CROSS JOIN LATERAL jsonb_array_elements_text(g.r->8) AS named(audience_id)
      JOIN audiences a ON a.id = named.audience_id AND a.workspace_id = m.workspace_id
      RETURNING workspace_id, audience_id, contact_id, joined_at
    ), counted AS (
      UPDATE audiences a SET member_count = a.member_count + c.n
      FROM (SELECT audience_id, count(*)::int AS n FROM joined GROUP BY audience_id) c WHERE a.id = c.audience_id
    ), hours AS (
      INSERT INTO audience_member_hours (audience_id, hour, joins, leaves)
      SELECT audience_id, date_trunc('hour', joined_at AT TIME ZONE 'UTC'), count(*), 0 FROM joined GROUP BY 1, 2
      ON CONFLICT (audience_id, hour) DO UPDATE SET joins = audience_member_hours.joins + EXCLUDED.joins
    ), days AS (
      INSERT INTO audience_member_days (audience_id, day, joins, leaves)
      SELECT audience_id, date_trunc('day', joined_at AT TIME ZONE 'UTC'), count(*), 0 FROM joined GROUP BY 1, 2
      ON CONFLICT (audience_id, day) DO UPDATE SET joins = audience_member_days.joins + EXCLUDED.joins
    ), sets AS (
      SELECT j.contact_id, j.workspace_id, array_agg(j.audience_id ORDER BY j.audience_id) AS ids
      FROM joined j JOIN audiences a ON a.id = j.audience_id AND a.builtin IS NULL
      GROUP BY j.contact_id, j.workspace_id
    ), kept AS (
      INSERT INTO contact_audience_sets (contact_id, workspace_id, audience_ids)
      SELECT contact_id, workspace_id, ids FROM sets
    )
    INSERT INTO audience_set_counts (workspace_id, audience_ids, contacts)
    SELECT workspace_id, ids, count(*)::int FROM sets GROUP BY workspace_id, ids
    ON CONFLICT (workspace_id, audience_ids) DO UPDATE SET contacts = audience_set_counts.contacts + EXCLUDED.contacts`.execute(
    db,
  );
}

/** The contact's open memberships close at `deletedAt`, counted as leaves. */
async function deleteContact(
  db: Db,
  { metadata: { workspaceId }, data: d }: Projected<'ContactDeleted'>,
): Promise<void> {
  await db.deleteFrom('contacts').where('workspace_id', '=', workspaceId).where('id', '=', d.contactId).execute();
  const closed = await sql<{ audience_id: string }>`
    WITH closed AS (
      UPDATE audience_members SET left_at = ${d.deletedAt}::timestamptz
      WHERE contact_id = ${d.contactId} AND left_at IS NULL
      RETURNING audience_id
    ), counts AS (
      SELECT audience_id, count(*)::int AS n FROM closed GROUP BY audience_id
    ), counted AS (
      UPDATE audiences a SET member_count = a.member_count - c.n FROM counts c WHERE a.id = c.audience_id
    ), daily AS (
      INSERT INTO audience_member_days (audience_id, day, joins, leaves)
      SELECT audience_id, date_trunc('day', ${d.deletedAt}::timestamptz AT TIME ZONE 'UTC'), 0, n FROM counts
      ON CONFLICT (audience_id, day) DO UPDATE SET leaves = audience_member_days.leaves + EXCLUDED.leaves
    )
    INSERT INTO audience_member_hours (audience_id, hour, joins, leaves)
    SELECT audience_id, date_trunc('hour', ${d.deletedAt}::timestamptz AT TIME ZONE 'UTC'), 0, n FROM counts
    ON CONFLICT (audience_id, hour) DO UPDATE SET leaves = audience_member_hours.leaves + EXCLUDED.leaves
    RETURNING audience_id`.execute(db);
  if (closed.rows.length > 0)
    await regroup(
      db,
      workspaceId,
      d.contactId,
      [],
      closed.rows.map((r) => r.audience_id),
    );
}

async function leaveAudience(
  db: Db,
  { metadata: { workspaceId }, data: d }: Projected<'ContactLeftAudience'>,
): Promise<void> {
  const closed = await sql`
    UPDATE audience_members SET left_at = ${d.leftAt}::timestamptz
    WHERE audience_id = ${d.audienceId} AND contact_id = ${d.contactId} AND left_at IS NULL`.execute(db);
  if (Number(closed.numAffectedRows ?? 0) === 0) return;
  await sql`UPDATE audiences SET member_count = member_count - 1 WHERE id = ${d.audienceId}`.execute(db);
  await hourly(db, d.audienceId, d.leftAt, 0, 1);
  await regroup(db, workspaceId, d.contactId, [], [d.audienceId]);
}

/** The audience goes with its history; where it stood in the list stays (a tombstone). */
async function deleteAudience(
  db: Db,
  { metadata: { workspaceId }, data: d }: Projected<'AudienceDeleted'>,
): Promise<void> {
  await sql`INSERT INTO audience_tombstones (workspace_id, id, created_at)
    SELECT workspace_id, id, created_at FROM audiences WHERE workspace_id = ${workspaceId} AND id = ${d.audienceId}
    ON CONFLICT (id) DO NOTHING`.execute(db);
  await db.deleteFrom('audiences').where('workspace_id', '=', workspaceId).where('id', '=', d.audienceId).execute();
  await db.deleteFrom('audience_members').where('audience_id', '=', d.audienceId).execute();
  await db.deleteFrom('audience_member_hours').where('audience_id', '=', d.audienceId).execute();
  await db.deleteFrom('audience_member_days').where('audience_id', '=', d.audienceId).execute();
  // Its members' sets lose it, and the counts of sets that differed only by it are merged.
  await sql`
    WITH shrunk AS (
      UPDATE contact_audience_sets SET audience_ids = array_remove(audience_ids, ${d.audienceId})
      WHERE workspace_id = ${workspaceId} AND audience_ids @> ARRAY[${d.audienceId}]::text[] AND cardinality(audience_ids) > 1
    ), emptied AS (
      DELETE FROM contact_audience_sets WHERE workspace_id = ${workspaceId} AND audience_ids = ARRAY[${d.audienceId}]::text[]
    ), gone AS (
      DELETE FROM audience_set_counts WHERE workspace_id = ${workspaceId} AND audience_ids @> ARRAY[${d.audienceId}]::text[]
      RETURNING audience_ids, contacts
    )
    INSERT INTO audience_set_counts (workspace_id, audience_ids, contacts)
    SELECT ${workspaceId}, array_remove(audience_ids, ${d.audienceId}), sum(contacts)::int FROM gone
    WHERE cardinality(audience_ids) > 1 GROUP BY 2
    ON CONFLICT (workspace_id, audience_ids) DO UPDATE SET contacts = audience_set_counts.contacts + EXCLUDED.contacts`.execute(
    db,
  );
}

/** Joins and leaves counted into the audience's hour and day. */
async function hourly(db: Db, audienceId: string, at: string, joins: number, leaves: number): Promise<void> {
  await sql`INSERT INTO audience_member_hours (audience_id, hour, joins, leaves)
    VALUES (${audienceId}, date_trunc('hour', ${at}::timestamptz AT TIME ZONE 'UTC'), ${joins}, ${leaves})
    ON CONFLICT (audience_id, hour) DO UPDATE
    SET joins = audience_member_hours.joins + EXCLUDED.joins, leaves = audience_member_hours.leaves + EXCLUDED.leaves`.execute(
    db,
  );
  await sql`INSERT INTO audience_member_days (audience_id, day, joins, leaves)
    VALUES (${audienceId}, date_trunc('day', ${at}::timestamptz AT TIME ZONE 'UTC'), ${joins}, ${leaves})
    ON CONFLICT (audience_id, day) DO UPDATE
    SET joins = audience_member_days.joins + EXCLUDED.joins, leaves = audience_member_days.leaves + EXCLUDED.leaves`.execute(
    db,
  );
}

/** Answers whether the join made a membership (not when the audience is gone, or a replay). */
async function join(db: Db, workspaceId: string, audienceId: string, contactId: string, at: string): Promise<boolean> {
  // A join to an audience deleted meanwhile is no membership; a replayed join counts once.
  const inserted = await sql`
    INSERT INTO audience_members (workspace_id, audience_id, contact_id, joined_at)
    SELECT ${workspaceId}, ${audienceId}, ${contactId}, ${at}::timestamptz
    WHERE EXISTS (SELECT 1 FROM audiences WHERE id = ${audienceId} AND workspace_id = ${workspaceId})
      AND NOT EXISTS (SELECT 1 FROM audience_members WHERE audience_id = ${audienceId} AND contact_id = ${contactId} AND left_at IS NULL)
    ON CONFLICT DO NOTHING`.execute(db);
  if (Number(inserted.numAffectedRows ?? 0) === 0) return false;
  await sql`UPDATE audiences SET member_count = member_count + 1 WHERE id = ${audienceId}`.execute(db);
  await hourly(db, audienceId, at, 1, 0);
  return true;
}

/**
 * Moves a contact from its set of custom audiences to that set with the custom ones of `joined`
 * and without `left`, and one count from the old set to the new. Called only with memberships
 * this event made or ended, so applying an event twice moves nothing the second time.
 */
async function regroup(
  db: Db,
  workspaceId: string,
  contactId: string,
  joined: string[],
  left: string[],
): Promise<void> {
  await sql`
    WITH old AS (
      SELECT audience_ids AS ids FROM contact_audience_sets WHERE contact_id = ${contactId}
    ), next AS (
      SELECT ARRAY(
        SELECT DISTINCT x FROM unnest(
          coalesce((SELECT ids FROM old), '{}') ||
          ARRAY(SELECT id FROM audiences WHERE id = ANY(${joined}::text[]) AND workspace_id = ${workspaceId} AND builtin IS NULL)
        ) AS x
        WHERE x <> ALL(${left}::text[]) ORDER BY x
      ) AS ids
    ), moved AS (
      -- No row stands for no set; nothing to do when the set stays as it was.
      SELECT (SELECT ids FROM old) AS before, (SELECT ids FROM next) AS after
      WHERE (SELECT ids FROM old) IS DISTINCT FROM nullif((SELECT ids FROM next), '{}')
    ), kept AS (
      INSERT INTO contact_audience_sets (contact_id, workspace_id, audience_ids)
      SELECT ${contactId}, ${workspaceId}, after FROM moved WHERE cardinality(after) > 0
      ON CONFLICT (contact_id) DO UPDATE SET audience_ids = EXCLUDED.audience_ids
    ), dropped AS (
      DELETE FROM contact_audience_sets WHERE contact_id = ${contactId} AND EXISTS (SELECT 1 FROM moved WHERE cardinality(after) = 0)
    ), fewer AS (
      UPDATE audience_set_counts SET contacts = contacts - 1
      WHERE workspace_id = ${workspaceId} AND audience_ids = (SELECT before FROM moved) AND contacts > 1
    ), emptied AS (
      -- A set nobody has any more goes, so the sets summed at read stay the ones in use.
      DELETE FROM audience_set_counts WHERE workspace_id = ${workspaceId} AND audience_ids = (SELECT before FROM moved) AND contacts = 1
    )
    INSERT INTO audience_set_counts (workspace_id, audience_ids, contacts)
    SELECT ${workspaceId}, after, 1 FROM moved WHERE cardinality(after) > 0
    ON CONFLICT (workspace_id, audience_ids) DO UPDATE SET contacts = audience_set_counts.contacts + 1`.execute(db);
}
