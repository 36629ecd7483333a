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
    async recipients(partition: string, emails: string[], broadcast: boolean) {
      // On the broadcast lane an address unsubscribed from everything is suppressed too (reason `unsubscribe`).
      const { rows } = await sql<{ email: string; reason: string | null; contact: boolean }>`SELECT e.email,
          COALESCE(
            (SELECT s.reason FROM suppressions s WHERE s.workspace_id = ${partition} AND s.email = e.email LIMIT 1),
            CASE WHEN ${broadcast} AND EXISTS (SELECT 1 FROM unsubscribes u WHERE u.workspace_id = ${partition}
              AND u.email = e.email AND u.audience_id IS NULL) THEN 'unsubscribe' END
          ) AS reason,
          EXISTS (SELECT 1 FROM contacts c WHERE c.workspace_id = ${partition} AND c.email = e.email) AS contact
        FROM unnest(${emails}::text[]) AS e(email)`.execute(db);
      return {
        suppressed: new Map(rows.flatMap((r) => (r.reason === null ? [] : [[r.email, r.reason] as const]))),
        contacts: new Set(rows.flatMap((r) => (r.contact ? [r.email] : []))),
      };
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
