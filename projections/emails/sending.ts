import { catchAllOwner } from '../../domain/shared/mailbox-owners.ts';
import { sql, type Kysely } from 'kysely';
import { findFile } from '../files/queries.ts';
import { findTemplate, findTemplateVersion } from '../templates/queries.ts';
import type { ReadModels } from '../tables.ts';

type Db = Kysely<ReadModels>;

/**
 * What a send reads of other slices' read models (commands/emails/handlers.ts `SendLookups`,
 * which this object satisfies; system.ts hands it over): the sending address, signatures,
 * suppressions and the template's published version.
 */
export function sendingLookups(db: Db) {
  const addresses = new InFlight<Awaited<ReturnType<typeof readAddress>>>();
  const recipients = new PerTick<string, { reason: string | null; contact: boolean; unsubscribed: boolean }>(
    (partition, emails) => readRecipients(db, partition, emails),
  );
  const readAddress = async (workspaceId: string, address: string) => {
    // One round trip: the address, its domain's tracking host while active, and the defaults of
    // the address and of its catch-all (owner `catchall-<domain id>`, domain/signatures/events.ts),
    // the address's own first.
    const { rows } = await sql<{
      id: string;
      address: string;
      domain: string;
      domain_id: string;
      enabled: boolean;
      tracking_host: string | null;
      sigs: Sig[] | null;
    }>`SELECT a.id, a.address, a.domain, a.domain_id, a.enabled, d.sigs,
        (SELECT dm.tracking_host FROM domains dm WHERE dm.domain = a.domain AND dm.workspace_id = a.workspace_id
          AND dm.tracking_status = 'active') AS tracking_host
        FROM addresses a
        LEFT JOIN LATERAL (
          SELECT json_agg(json_build_object('id', s.id, 'owner', s.owner, 'html', s.html, 'd', s.is_default, 'r', s.is_reply_default)
            ORDER BY s.owner = a.id DESC) AS sigs
          FROM signatures s
          WHERE s.workspace_id = a.workspace_id AND (s.is_default OR s.is_reply_default)
            AND s.owner IN (a.id, ${catchAllOwner('')} || a.domain_id)) d ON true
        WHERE a.workspace_id = ${workspaceId} AND a.address = ${address} AND a.registered`.execute(db);
    const row = rows[0];
    if (!row) return undefined;
    return {
      id: row.id,
      address: row.address,
      domain: row.domain,
      domainId: row.domain_id,
      enabled: row.enabled,
      trackingHost: row.tracking_host,
      defaults: defaultsOf(row.sigs),
    };
  };
  return {
    /** Sends of one moment from one address (a batch's items) share one read of it. */
    address: (workspaceId: string, address: string) =>
      addresses.get(`${workspaceId}\n${address}`, () => readAddress(workspaceId, address)),
    catchAll: (workspaceId: string, address: string) => readCatchAll(db, workspaceId, address),
    async signature(workspaceId: string, id: string) {
      const { rows } = await sql<{ id: string; owner: string; html: string }>`SELECT id, owner, html FROM signatures
        WHERE workspace_id = ${workspaceId} AND id = ${id}`.execute(db);
      return rows[0];
    },
    /**
     * The recipients of the sends of one tick in one partition (a batch's items) are read in one
     * query, whatever their lanes; on the broadcast lane an address unsubscribed from everything
     * counts as suppressed (reason `unsubscribe`).
     */
    async recipients(partition: string, emails: string[], broadcast: boolean) {
      const found = await recipients.get(partition, emails);
      const suppressed = new Map<string, string>();
      const contacts = new Set<string>();
      for (const email of emails) {
        const r = found.get(email);
        if (r?.reason) suppressed.set(email, r.reason);
        else if (broadcast && r?.unsubscribed) suppressed.set(email, 'unsubscribe');
        if (r?.contact) contacts.add(email);
      }
      return { suppressed, contacts };
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
    async file(partition: string, id: string) {
      const row = await findFile(db, partition, null, id);
      return (
        row && {
          id: row.id,
          address: row.address,
          domain: row.domain,
          filename: row.filename,
          contentType: row.content_type,
          size: row.size,
          sha256: row.sha256,
        }
      );
    },
  };
}

type Sig = { id: string; owner: string; html: string; d: boolean; r: boolean };

/** The default signatures for new mail (`d`) and replies (`r`) among those read, the first of each. */
function defaultsOf(sigs: Sig[] | null) {
  const pick = (flag: 'd' | 'r') => {
    const found = sigs?.find((x) => x[flag]);
    return found ? { id: found.id, owner: found.owner, html: found.html } : null;
  };
  return { newMail: pick('d'), replies: pick('r') };
}

/**
 * An address of a domain whose catch-all takes its mail, as the catch-all sends from it: the
 * domain verified for receiving with its catch-all on (what `mailboxFor` files under `*@<domain>`),
 * its tracking host while active, the catch-all's default signatures. Enabled: a catch-all that
 * is on takes mail, and a disabled catch-all does not exist.
 */
async function readCatchAll(db: Db, workspaceId: string, address: string) {
  const { rows } = await sql<{ id: string; domain: string; tracking_host: string | null; sigs: Sig[] | null }>`
    SELECT d.id, d.domain, CASE WHEN d.tracking_status = 'active' THEN d.tracking_host END AS tracking_host,
      (SELECT json_agg(json_build_object('id', s.id, 'owner', s.owner, 'html', s.html, 'd', s.is_default,
          'r', s.is_reply_default))
        FROM signatures s
        WHERE s.workspace_id = d.workspace_id AND (s.is_default OR s.is_reply_default)
          AND s.owner = ${catchAllOwner('')} || d.id) AS sigs
    FROM domains d
    WHERE d.workspace_id = ${workspaceId} AND d.domain = ${address.slice(address.lastIndexOf('@') + 1)}
      AND d.catch_all AND d.receiving_verified_at IS NOT NULL`.execute(db);
  const row = rows[0];
  if (!row) return undefined;
  return {
    id: catchAllOwner(row.id),
    address,
    domain: row.domain,
    domainId: row.id,
    enabled: true,
    trackingHost: row.tracking_host,
    defaults: defaultsOf(row.sigs),
  };
}

async function readRecipients(db: Db, partition: string, emails: string[]) {
  const { rows } = await sql<{
    email: string;
    reason: string | null;
    contact: boolean;
    unsubscribed: boolean;
  }>`SELECT e.email,
      (SELECT s.reason FROM suppressions s WHERE s.workspace_id = ${partition} AND s.email = e.email LIMIT 1) AS reason,
      EXISTS (SELECT 1 FROM contacts c WHERE c.workspace_id = ${partition} AND c.email = e.email) AS contact,
      EXISTS (SELECT 1 FROM unsubscribes u WHERE u.workspace_id = ${partition} AND u.email = e.email
        AND u.audience_id IS NULL) AS unsubscribed
    FROM unnest(${emails}::text[]) AS e(email)`.execute(db);
  return new Map(rows.map((r) => [r.email, { reason: r.reason, contact: r.contact, unsubscribed: r.unsubscribed }]));
}

/** Concurrent reads of one key share the read under way; a read starting after it settled reads afresh. */
class InFlight<V> {
  private readonly reads = new Map<string, Promise<V>>();

  get(key: string, read: () => Promise<V>): Promise<V> {
    const pending = this.reads.get(key);
    if (pending) return pending;
    const started = read().finally(() => this.reads.delete(key));
    this.reads.set(key, started);
    return started;
  }
}

/** Keys asked for in one tick under one group are read together, in one call of `read`. */
class PerTick<K, V> {
  private readonly waiting = new Map<string, { keys: Set<K>; done: Promise<Map<K, V>> }>();

  constructor(private readonly read: (group: string, keys: K[]) => Promise<Map<K, V>>) {}

  get(group: string, keys: K[]): Promise<Map<K, V>> {
    let batch = this.waiting.get(group);
    if (!batch) {
      const gathered = new Set<K>();
      const done = new Promise<void>((resolve) => queueMicrotask(resolve)).then(() => {
        this.waiting.delete(group);
        return this.read(group, [...gathered]);
      });
      batch = { keys: gathered, done };
      this.waiting.set(group, batch);
    }
    for (const key of keys) batch.keys.add(key);
    return batch.done;
  }
}
