import { sql, type Kysely } from 'kysely';
import { findAddressByName } from '../addresses/queries.ts';
import { findTemplate, findTemplateVersion } from '../templates/queries.ts';
import type { ReadModels } from '../tables.ts';

type Db = Kysely<ReadModels>;

/**
 * What a send reads of other slices' read models (commands/emails/handlers.ts `SendLookups`,
 * which this object satisfies; system.ts hands it over): the sending address, signatures,
 * suppressions and the template's published version.
 */
export function sendingLookups(db: Db) {
  return {
    async address(workspaceId: string, address: string) {
      const row = await findAddressByName(db, workspaceId, address);
      return (
        row && {
          id: row.id,
          address: row.address,
          domain: row.domain,
          domainId: row.domain_id,
          enabled: row.enabled,
        }
      );
    },
    async signature(workspaceId: string, id: string) {
      const { rows } = await sql<{ id: string; owner: string; html: string }>`SELECT id, owner, html FROM signatures
        WHERE workspace_id = ${workspaceId} AND id = ${id}`.execute(db);
      return rows[0];
    },
    async defaultSignature(workspaceId: string, owners: string[], reply: boolean) {
      const { rows } = await sql<{ id: string; owner: string; html: string }>`SELECT id, owner, html FROM signatures
        WHERE workspace_id = ${workspaceId} AND owner = ANY(${owners}::text[])
          AND ${reply ? sql`is_reply_default` : sql`is_default`}
        ORDER BY array_position(${owners}::text[], owner) LIMIT 1`.execute(db);
      return rows[0];
    },
    async suppressions(partition: string, emails: string[]) {
      if (emails.length === 0) return new Map<string, string>();
      const { rows } = await sql<{ email: string; reason: string }>`SELECT email, reason FROM suppressions
        WHERE workspace_id = ${partition} AND email = ANY(${emails}::text[])`.execute(db);
      return new Map(rows.map((r) => [r.email, r.reason]));
    },
    async template(workspaceId: string, idOrSlug: string) {
      const row = await findTemplate(db, workspaceId, idOrSlug);
      return (
        row && { id: row.id, archived: row.archived, publishedVersion: row.published_version, revision: row.revision }
      );
    },
    async templateVersion(templateId: string, version: number) {
      const v = await findTemplateVersion(db, templateId, version);
      return v && { ...v, sanitisedHtml: v.sanitised_html };
    },
  };
}
