import { sql, type Kysely } from 'kysely';
import type { ContactsTables } from '../contacts/tables.ts';

export interface ContactRef {
  id: string;
  email: string;
}

/** Contacts of a workspace named by address or id, in one round trip (a batch names up to 100). */
export async function lookupContacts(db: Kysely<ContactsTables>, workspaceId: string, emails: string[], ids: string[]): Promise<{ byEmail: Map<string, ContactRef>; byId: Map<string, ContactRef> }> {
  const byEmail = new Map<string, ContactRef>();
  const byId = new Map<string, ContactRef>();
  if (emails.length === 0 && ids.length === 0) return { byEmail, byId };
  const { rows } = await sql<ContactRef>`SELECT id, email FROM contacts
    WHERE workspace_id = ${workspaceId} AND (email = ANY(${emails}::text[]) OR id = ANY(${ids}::text[]))`.execute(db);
  for (const r of rows) {
    byEmail.set(r.email, r);
    byId.set(r.id, r);
  }
  return { byEmail, byId };
}
