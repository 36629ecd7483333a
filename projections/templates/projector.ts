import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { TemplateContent } from '../../domain/templates/events.ts';
import { defineProjector, type Projected } from '../projector.ts';
import type { TemplatesTables } from './tables.ts';

type Db = Kysely<TemplatesTables>;
const json = (v: unknown) => JSON.stringify(v);

/**
 * Templates and their versions. Names and slugs come from the workspace's template registry,
 * content and status from each template's stream, so a row is shown only once registered.
 * `revision` (stream revision) and `registry_position` make every apply idempotent: an event
 * older than what the row already holds changes nothing. `search` is what the list's `search`
 * matches: id, name, slug, description and the published subject.
 */
export const templatesProjector = defineProjector<TemplatesTables>()({
  name: 'templates',
  version: 1,
  tables: ['templates', 'template_versions'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.templates (
      id text PRIMARY KEY,
      workspace_id text NOT NULL,
      registered boolean NOT NULL DEFAULT false,
      name text NOT NULL DEFAULT '',
      name_key text NOT NULL DEFAULT '',
      slug text NOT NULL DEFAULT '',
      description text,
      archived boolean NOT NULL DEFAULT false,
      published_version integer,
      latest_version integer NOT NULL DEFAULT 0,
      subject text,
      engine text,
      slots jsonb,
      props jsonb,
      revision integer NOT NULL DEFAULT -1,
      renames integer NOT NULL DEFAULT 0,
      registry_position bigint NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      search text GENERATED ALWAYS AS (
        lower(id || ' ' || name || ' ' || slug || ' ' || coalesce(description, '') || ' ' || coalesce(subject, ''))
      ) STORED
    );
    CREATE TABLE IF NOT EXISTS ${s}.template_versions (
      template_id text NOT NULL,
      version integer NOT NULL,
      workspace_id text NOT NULL,
      id text NOT NULL,
      published boolean NOT NULL DEFAULT false,
      engine text NOT NULL,
      subject text NOT NULL,
      document jsonb,
      html text,
      sanitised_html text,
      slots jsonb NOT NULL,
      props jsonb NOT NULL,
      restored_from integer,
      created_at timestamptz NOT NULL,
      published_at timestamptz,
      PRIMARY KEY (template_id, version)
    );`,
  indexes: (s) => `
    CREATE INDEX IF NOT EXISTS templates_updated ON ${s}.templates (workspace_id, updated_at, id);
    CREATE INDEX IF NOT EXISTS templates_created ON ${s}.templates (workspace_id, created_at, id);
    CREATE INDEX IF NOT EXISTS templates_name ON ${s}.templates (workspace_id, name_key, id);
    CREATE INDEX IF NOT EXISTS templates_slug ON ${s}.templates (workspace_id, slug);`,
  on: {
    TemplateCreated: async (db, { metadata: { workspaceId }, revision, data: d }) => {
      await sql`INSERT INTO templates (id, workspace_id, description, revision, created_at, updated_at)
        VALUES (${d.templateId}, ${workspaceId}, ${d.description}, ${revision}, ${d.createdAt}, ${d.createdAt})
        ON CONFLICT (id) DO NOTHING`.execute(db);
    },
    TemplateVersionDrafted: draftVersion,
    TemplateDraftEdited: editDraft,
    TemplateDescriptionChanged: async (db, e) => {
      await advance(db, e, e.data.changedAt, sql`, description = ${e.data.description}`);
    },
    TemplateVersionPublished: publishVersion,
    TemplateArchived: async (db, e) => {
      await advance(db, e, e.data.archivedAt, sql`, archived = true`);
    },
    TemplateUnarchived: async (db, e) => {
      await advance(db, e, e.data.unarchivedAt, sql`, archived = false`);
    },
    TemplateVersionDeleted: async (db, e) => {
      const d = e.data;
      if (await advance(db, e, d.deletedAt))
        await sql`DELETE FROM template_versions WHERE template_id = ${d.templateId} AND version = ${d.version}`.execute(
          db,
        );
    },
    TemplateDeleted: (db, e) => removeTemplate(db, e.data.templateId),
    TemplateRegistered: async (db, e) => {
      const d = e.data;
      await fromRegistry(
        db,
        e,
        d.registeredAt,
        sql`registered = true, name = ${d.name}, name_key = ${d.name.toLowerCase()}, slug = ${d.slug}`,
      );
    },
    TemplateRenamed: async (db, e) => {
      const d = e.data;
      await fromRegistry(
        db,
        e,
        d.renamedAt,
        sql`name = ${d.name}, name_key = ${d.name.toLowerCase()}, renames = renames + 1`,
      );
    },
    TemplateUnregistered: (db, e) => removeTemplate(db, e.data.templateId),
  },
});

/** An event of the template's own stream, ordered by its stream revision. */
type StreamEvent = Projected<
  | 'TemplateVersionDrafted'
  | 'TemplateDraftEdited'
  | 'TemplateDescriptionChanged'
  | 'TemplateVersionPublished'
  | 'TemplateArchived'
  | 'TemplateUnarchived'
  | 'TemplateVersionDeleted'
>;

/**
 * Moves the row to this stream event, `at` (the time of its command) becoming its updatedAt;
 * false when the row already holds it (a replay).
 */
async function advance(db: Db, e: StreamEvent, at: string, set: RawBuilder<unknown> = sql``): Promise<boolean> {
  const r = await sql`UPDATE templates SET revision = ${e.revision}, updated_at = ${at} ${set}
    WHERE id = ${e.data.templateId} AND revision < ${e.revision}`.execute(db);
  return Number(r.numAffectedRows ?? 0) > 0;
}

/** The registry's events are ordered by their place in the log: they are not in the template's stream. */
async function fromRegistry(
  db: Db,
  e: Projected<'TemplateRegistered' | 'TemplateRenamed'>,
  at: string,
  set: RawBuilder<unknown>,
): Promise<void> {
  await sql`UPDATE templates SET registry_position = ${e.position}, updated_at = ${at}, ${set}
    WHERE id = ${e.data.templateId} AND registry_position < ${e.position}`.execute(db);
}

const content = (v: TemplateContent) => [
  v.engine,
  v.subject,
  v.document === null ? null : json(v.document),
  v.html,
  json(v.slots),
  json(v.props),
];

async function draftVersion(db: Db, e: Projected<'TemplateVersionDrafted'>): Promise<void> {
  const d = e.data;
  if (!(await advance(db, e, d.draftedAt, sql`, latest_version = greatest(latest_version, ${d.version})`))) return;
  const [engine, subject, document, html, slots, props] = content(d);
  await sql`INSERT INTO template_versions
    (template_id, version, workspace_id, id, engine, subject, document, html, slots, props, restored_from, created_at)
    VALUES (${d.templateId}, ${d.version}, ${e.metadata.workspaceId}, ${d.versionId}, ${engine}, ${subject}, ${document}::jsonb, ${html},
      ${slots}::jsonb, ${props}::jsonb, ${d.restoredFrom}, ${d.draftedAt})
    ON CONFLICT DO NOTHING`.execute(db);
}

async function editDraft(db: Db, e: Projected<'TemplateDraftEdited'>): Promise<void> {
  const d = e.data;
  if (!(await advance(db, e, d.editedAt))) return;
  const [engine, subject, document, html, slots, props] = content(d);
  await sql`UPDATE template_versions SET engine = ${engine}, subject = ${subject}, document = ${document}::jsonb, html = ${html},
    slots = ${slots}::jsonb, props = ${props}::jsonb WHERE template_id = ${d.templateId} AND version = ${d.version}`.execute(
    db,
  );
}

async function publishVersion(db: Db, e: Projected<'TemplateVersionPublished'>): Promise<void> {
  const d = e.data;
  if (!(await advance(db, e, d.publishedAt))) return;
  await sql`UPDATE template_versions SET published = true, published_at = ${d.publishedAt}, sanitised_html = ${d.sanitisedHtml}
    WHERE template_id = ${d.templateId} AND version = ${d.version}`.execute(db);
  await sql`UPDATE templates t SET published_version = v.version, subject = v.subject, engine = v.engine, slots = v.slots, props = v.props
    FROM template_versions v WHERE t.id = ${d.templateId} AND v.template_id = t.id AND v.version = ${d.version}`.execute(
    db,
  );
}

async function removeTemplate(db: Db, templateId: string): Promise<void> {
  await sql`DELETE FROM template_versions WHERE template_id = ${templateId}`.execute(db);
  await sql`DELETE FROM templates WHERE id = ${templateId}`.execute(db);
}
