import { sql, type Kysely } from 'kysely';
import { signatureOwnerOfCatchAll } from '../../domain/signatures/events.ts';
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
      type Sig = { id: string; owner: string; html: string; d: boolean; r: boolean };
      // One round trip: the address, and the defaults of the address and of its catch-all (owner
      // `catchall-<domain id>`, domain/signatures/events.ts), the address's own first.
      const { rows } = await sql<{
        id: string;
        address: string;
        domain: string;
        domain_id: string;
        enabled: boolean;
        sigs: Sig[] | null;
      }>`SELECT a.id, a.address, a.domain, a.domain_id, a.enabled, d.sigs FROM addresses a
        LEFT JOIN LATERAL (
          SELECT json_agg(json_build_object('id', s.id, 'owner', s.owner, 'html', s.html, 'd', s.is_default, 'r', s.is_reply_default)
            ORDER BY s.owner = a.id DESC) AS sigs
          FROM signatures s
          WHERE s.workspace_id = a.workspace_id AND (s.is_default OR s.is_reply_default)
            AND s.owner IN (a.id, ${signatureOwnerOfCatchAll('')} || a.domain_id)) d ON true
        WHERE a.workspace_id = ${workspaceId} AND a.address = ${address} AND a.registered`.execute(db);
      const row = rows[0];
      if (!row) return undefined;
      const pick = (flag: 'd' | 'r') => {
        const found = row.sigs?.find((x) => x[flag]);
        return found ? { id: found.id, owner: found.owner, html: found.html } : null;
      };
      return {
        id: row.id,
        address: row.address,
        domain: row.domain,
        domainId: row.domain_id,
        enabled: row.enabled,
        defaults: { newMail: pick('d'), replies: pick('r') },
      };
    },
    async signature(workspaceId: string, id: string) {
      const { rows } = await sql<{ id: string; owner: string; html: string }>`SELECT id, owner, html FROM signatures
        WHERE workspace_id = ${workspaceId} AND id = ${id}`.execute(db);
      return rows[0];
    },
    async recipients(partition: string, emails: string[]) {
      const { rows } = await sql<{ email: string; reason: string | null; contact: boolean }>`SELECT e.email,
          (SELECT s.reason FROM suppressions s WHERE s.workspace_id = ${partition} AND s.email = e.email LIMIT 1) AS reason,
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
