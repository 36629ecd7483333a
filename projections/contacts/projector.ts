import { sql } from 'kysely';
import type { Projector } from '../projector.ts';

/**
 * The contact book, the audiences and the membership history. `audience_members` holds one row
 * per stay of a contact in an audience (joined_at, left_at null while it lasts), so growth for any
 * past window is counted from it; `audiences.member_count` is the live count, kept in the same
 * transaction, so a fresh `contactCount` and the growth totals cost one row read.
 */
export const contactsProjector: Projector = {
  name: 'contacts',
  version: 4,
  tables: ['contacts', 'audiences', 'audience_members', 'audience_member_hours', 'audience_member_days'],
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
    CREATE INDEX IF NOT EXISTS audience_members_current ON ${s}.audience_members (audience_id, contact_id) WHERE left_at IS NULL;`,
  handles: [
    'ContactCreated',
    'ContactUpdated',
    'ContactDeleted',
    'ContactJoinedAudience',
    'ContactLeftAudience',
    'ContactSeen',
    'AudienceCreated',
    'AudienceUpdated',
    'AudienceDeleted',
  ],
  async apply(db, event) {
    const workspaceId = event.metadata.workspaceId as string;
    const d = event.data as any;
    const hourly = async (audienceId: string, at: string, joins: number, leaves: number) => {
      await sql`INSERT INTO audience_member_hours (audience_id, hour, joins, leaves)
          VALUES (${audienceId}, date_trunc('hour', ${at}::timestamptz AT TIME ZONE 'UTC'), ${joins}, ${leaves})
          ON CONFLICT (audience_id, hour) DO UPDATE
          SET joins = audience_member_hours.joins + EXCLUDED.joins, leaves = audience_member_hours.leaves + EXCLUDED.leaves`.execute(db);
      await sql`INSERT INTO audience_member_days (audience_id, day, joins, leaves)
          VALUES (${audienceId}, date_trunc('day', ${at}::timestamptz AT TIME ZONE 'UTC'), ${joins}, ${leaves})
          ON CONFLICT (audience_id, day) DO UPDATE
          SET joins = audience_member_days.joins + EXCLUDED.joins, leaves = audience_member_days.leaves + EXCLUDED.leaves`.execute(db);
    };
    const join = async (audienceId: string, contactId: string, at: string) => {
      // A join to an audience deleted meanwhile is no membership; a replayed join counts once.
      const inserted = await sql`
        INSERT INTO audience_members (workspace_id, audience_id, contact_id, joined_at)
        SELECT ${workspaceId}, ${audienceId}, ${contactId}, ${at}::timestamptz
        WHERE EXISTS (SELECT 1 FROM audiences WHERE id = ${audienceId} AND workspace_id = ${workspaceId})
          AND NOT EXISTS (SELECT 1 FROM audience_members WHERE audience_id = ${audienceId} AND contact_id = ${contactId} AND left_at IS NULL)
        ON CONFLICT DO NOTHING`.execute(db);
      if (Number(inserted.numAffectedRows ?? 0) > 0) {
        await sql`UPDATE audiences SET member_count = member_count + 1 WHERE id = ${audienceId}`.execute(db);
        await hourly(audienceId, at, 1, 0);
      }
    };
    switch (event.type) {
      case 'ContactCreated':
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
        for (const audienceId of d.audienceIds as string[]) await join(audienceId, d.contactId, d.createdAt);
        break;
      case 'ContactUpdated':
        await db
          .updateTable('contacts')
          .set({ name: d.name, notes: d.notes, attributes: JSON.stringify(d.attributes), updated_at: d.updatedAt })
          .where('workspace_id', '=', workspaceId)
          .where('id', '=', d.contactId)
          .execute();
        break;
      case 'ContactSeen':
        await db.updateTable('contacts').set({ last_seen_at: d.seenAt }).where('workspace_id', '=', workspaceId).where('id', '=', d.contactId).execute();
        break;
      case 'ContactDeleted':
        await db.deleteFrom('contacts').where('workspace_id', '=', workspaceId).where('id', '=', d.contactId).execute();
        await sql`
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
          ON CONFLICT (audience_id, hour) DO UPDATE SET leaves = audience_member_hours.leaves + EXCLUDED.leaves`.execute(db);
        break;
      case 'ContactJoinedAudience':
        await join(d.audienceId, d.contactId, d.joinedAt);
        break;
      case 'ContactLeftAudience': {
        const closed = await sql`
          UPDATE audience_members SET left_at = ${d.leftAt}::timestamptz
          WHERE audience_id = ${d.audienceId} AND contact_id = ${d.contactId} AND left_at IS NULL`.execute(db);
        if (Number(closed.numAffectedRows ?? 0) > 0) {
          await sql`UPDATE audiences SET member_count = member_count - 1 WHERE id = ${d.audienceId}`.execute(db);
          await hourly(d.audienceId, d.leftAt, 0, 1);
        }
        break;
      }
      case 'AudienceCreated':
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
        break;
      case 'AudienceUpdated':
        await db
          .updateTable('audiences')
          .set({ name: d.name, description: d.description, show_on_preferences: d.showOnPreferences, updated_at: d.updatedAt })
          .where('workspace_id', '=', workspaceId)
          .where('id', '=', d.audienceId)
          .execute();
        break;
      case 'AudienceDeleted':
        await db.deleteFrom('audiences').where('workspace_id', '=', workspaceId).where('id', '=', d.audienceId).execute();
        await db.deleteFrom('audience_members').where('audience_id', '=', d.audienceId).execute();
        await db.deleteFrom('audience_member_hours').where('audience_id', '=', d.audienceId).execute();
        await db.deleteFrom('audience_member_days').where('audience_id', '=', d.audienceId).execute();
        break;
    }
  },
};
