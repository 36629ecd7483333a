import { sql } from 'kysely';
import type { Projector } from '../projector.ts';

const json = (v: unknown) => JSON.stringify(v);

/**
 * Templates and their versions. Names and slugs come from the workspace's template registry,
 * content and status from each template's stream, so a row is shown only once registered.
 * `revision` (stream revision) and `registry_position` make every apply idempotent: an event
 * older than what the row already holds changes nothing. `search` is what the list's `search`
 * matches: id, name, slug, description and the published subject.
 */
export const templatesProjector: Projector = {
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
  handles: [
    'TemplateCreated',
    'TemplateVersionDrafted',
    'TemplateDraftEdited',
    'TemplateDescriptionChanged',
    'TemplateVersionPublished',
    'TemplateArchived',
    'TemplateUnarchived',
    'TemplateVersionDeleted',
    'TemplateDeleted',
    'TemplateRegistered',
    'TemplateRenamed',
    'TemplateUnregistered',
  ],
  async apply(db, event) {
    const workspaceId = event.metadata.workspaceId as string;
    const d = event.data as any;
    // Each event carries the time of its command; the row's updatedAt is the latest of them.
    const at: string = d.draftedAt ?? d.editedAt ?? d.changedAt ?? d.publishedAt ?? d.archivedAt ?? d.unarchivedAt ?? d.deletedAt ??
      d.registeredAt ?? d.renamedAt ?? event.recordedAt.toISOString();
    /** Moves the row to this stream event; false when the row already holds it (a replay). */
    const advance = async (set = sql``): Promise<boolean> => {
      const r = await sql`UPDATE templates SET revision = ${event.revision}, updated_at = ${at} ${set}
        WHERE id = ${d.templateId} AND revision < ${event.revision}`.execute(db);
      return Number(r.numAffectedRows ?? 0) > 0;
    };
    const fromRegistry = (set: ReturnType<typeof sql>) =>
      sql`UPDATE templates SET registry_position = ${event.position}, updated_at = ${at}, ${set}
        WHERE id = ${d.templateId} AND registry_position < ${event.position}`.execute(db);
    const content = (v: any) => [v.engine, v.subject, v.document === null ? null : json(v.document), v.html, json(v.slots), json(v.props)];
    const remove = async () => {
      await sql`DELETE FROM template_versions WHERE template_id = ${d.templateId}`.execute(db);
      await sql`DELETE FROM templates WHERE id = ${d.templateId}`.execute(db);
    };
    switch (event.type) {
      case 'TemplateCreated':
        await sql`INSERT INTO templates (id, workspace_id, description, revision, created_at, updated_at)
          VALUES (${d.templateId}, ${workspaceId}, ${d.description}, ${event.revision}, ${d.createdAt}, ${d.createdAt})
          ON CONFLICT (id) DO NOTHING`.execute(db);
        break;
      case 'TemplateVersionDrafted':
        if (await advance(sql`, latest_version = greatest(latest_version, ${d.version})`)) {
          const [engine, subject, document, html, slots, props] = content(d);
          await sql`INSERT INTO template_versions
            (template_id, version, workspace_id, id, engine, subject, document, html, slots, props, restored_from, created_at)
            VALUES (${d.templateId}, ${d.version}, ${workspaceId}, ${d.versionId}, ${engine}, ${subject}, ${document}::jsonb, ${html},
              ${slots}::jsonb, ${props}::jsonb, ${d.restoredFrom}, ${d.draftedAt})
            ON CONFLICT DO NOTHING`.execute(db);
        }
        break;
      case 'TemplateDraftEdited':
        if (await advance()) {
          const [engine, subject, document, html, slots, props] = content(d);
          await sql`UPDATE template_versions SET engine = ${engine}, subject = ${subject}, document = ${document}::jsonb, html = ${html},
            slots = ${slots}::jsonb, props = ${props}::jsonb WHERE template_id = ${d.templateId} AND version = ${d.version}`.execute(db);
        }
        break;
      case 'TemplateDescriptionChanged':
        await advance(sql`, description = ${d.description}`);
        break;
      case 'TemplateVersionPublished':
        if (await advance()) {
          await sql`UPDATE template_versions SET published = true, published_at = ${d.publishedAt}, sanitised_html = ${d.sanitisedHtml}
            WHERE template_id = ${d.templateId} AND version = ${d.version}`.execute(db);
          await sql`UPDATE templates t SET published_version = v.version, subject = v.subject, engine = v.engine, slots = v.slots, props = v.props
            FROM template_versions v WHERE t.id = ${d.templateId} AND v.template_id = t.id AND v.version = ${d.version}`.execute(db);
        }
        break;
      case 'TemplateArchived':
        await advance(sql`, archived = true`);
        break;
      case 'TemplateUnarchived':
        await advance(sql`, archived = false`);
        break;
      case 'TemplateVersionDeleted':
        if (await advance()) await sql`DELETE FROM template_versions WHERE template_id = ${d.templateId} AND version = ${d.version}`.execute(db);
        break;
      case 'TemplateDeleted':
      case 'TemplateUnregistered':
        await remove();
        break;
      case 'TemplateRegistered':
        await fromRegistry(sql`registered = true, name = ${d.name}, name_key = ${d.name.toLowerCase()}, slug = ${d.slug}`);
        break;
      case 'TemplateRenamed':
        await fromRegistry(sql`name = ${d.name}, name_key = ${d.name.toLowerCase()}, renames = renames + 1`);
        break;
    }
  },
};
