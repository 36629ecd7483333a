import type pg from 'pg';
import { z } from 'zod';
import { createAudience, ensureDefaultAudience, loadAudiences } from '../../commands/audiences/handlers.ts';
import {
  addToAudience,
  createContact,
  createContacts,
  type CreateContactInput,
} from '../../commands/contacts/handlers.ts';
import { loadState, type Actor, type CommandContext } from '../../commands/execute.ts';
import { addSuppression, addSuppressions, type AddSuppressionInput } from '../../commands/suppressions/handlers.ts';
import { createTemplate } from '../../commands/templates/handlers.ts';
import {
  createWebhookEndpoint,
  updateWebhookEndpoint,
  type ReceiverUrlCheck,
} from '../../commands/webhooks/handlers.ts';
import { AUDIENCE_NAME_MAX } from '../../domain/audiences/decide.ts';
import type { AudiencesState } from '../../domain/audiences/state.ts';
import { ATTRIBUTE_KEY, ATTRIBUTE_VALUE_MAX, ATTRIBUTES_MAX, AUDIENCE_IDS_MAX } from '../../domain/contacts/decide.ts';
import {
  withError,
  type FilledResource,
  type ImportReport,
  type ImportResource,
  type ProviderName,
} from '../../domain/provider-imports/providers.ts';
import { DomainError } from '../../domain/shared/errors.ts';
import { inTurns } from '../in-turns.ts';
import { entryByName } from '../../domain/template-names/decide.ts';
import { templateNamesStream } from '../../domain/template-names/events.ts';
import { templateNamesAggregate } from '../../domain/template-names/state.ts';
import { webhooksStream } from '../../domain/webhooks/events.ts';
import { webhooksAggregate } from '../../domain/webhooks/state.ts';
import type { SourceItem } from '../../infra/providers/port.ts';

/** What applying one page needs: the commands (their read-model waits deferred to the page's end), the run. */
export interface FillContext {
  commands: CommandContext;
  pool: pg.Pool;
  checkUrl: ReceiverUrlCheck;
  actor: Actor;
  importId: string;
  provider: ProviderName;
}

const TEMPLATE_NAME_MAX = 100;
/**
 * Rows of a page of contacts or suppressions whose commands run at once once the page's new ones
 * are made (`makeTogether`): those left join audiences, each on its own contact's stream.
 */
const ROWS_IN_FLIGHT = 250;

/** The report with one more row of `resource` counted under `key`. */
const counted = (
  report: ImportReport,
  resource: FilledResource,
  key: 'imported' | 'existing' | 'failed' | 'unsubscribed',
): ImportReport => {
  const counts = report[resource as 'contacts'];
  return { ...report, [resource]: { ...counts, [key]: (counts[key] ?? 0) + 1 } };
};
const email = z.string().trim().toLowerCase().max(320).pipe(z.email());

type Item<R extends SourceItem['resource']> = Extract<SourceItem, { resource: R }>;

/**
 * Where a source row stands for this import: claimed by an earlier one (`seen` once this import
 * has counted it at a checkpoint), done by this one, or to do.
 */
type Claim = 'earlier' | 'seen' | 'done' | 'fresh' | 'again';

/**
 * The source map's rows of a run's provider and resource for the source ids `wanted` lists (a
 * set-returning expression aliased `wanted(id, ...)`), as `s` with its `row` (ctid), each found
 * through the primary key. Not `source_id = ANY(...)` or a join the planner picks: the table
 * grows from empty during an import, and until it is first analyzed the planner takes the
 * workspace's rows for one and scans them all for each page (at 100,000 rows, 18 ms a statement,
 * as much for an empty list, and 30 ms for the join), so a page cost more the more were done.
 */
const sourceRows = (workspace: string, provider: string, resource: string, wanted: string): string =>
  `${wanted} CROSS JOIN LATERAL (SELECT ctid AS row, * FROM provider_import_sources
     WHERE workspace_id = ${workspace} AND provider = ${provider} AND resource = ${resource} AND source_id = wanted.id
     OFFSET 0) s`;

/**
 * Claims the page's source ids for this import (a row another import claimed stays theirs) and
 * answers where each stands: `fresh` (claimed now), `again` (claimed by this import on a page a
 * crash cut, not yet made), `done` (made by this import already: a contact in a second list),
 * `earlier` (an earlier import made it), with the target ids known.
 */
async function claim(
  fc: FillContext,
  resource: string,
  ids: string[],
): Promise<Map<string, { claim: Claim; target: string | null }>> {
  const { workspaceId } = fc.actor;
  const unique = [...new Set(ids)];
  type Row = { source_id: string; import_id: string; target_id: string | null; seen_by: string | null };
  // One round trip: the rows claimed now, and those claimed before as the statement's snapshot
  // shows them (it does not show its own inserts, so no row is answered twice).
  const { rows } = await fc.pool.query<Row & { fresh: boolean }>(
    `WITH fresh AS (
       INSERT INTO provider_import_sources (workspace_id, provider, resource, source_id, import_id)
       SELECT $1, $2, $3, s, $5 FROM unnest($4::text[]) AS s
       ON CONFLICT DO NOTHING RETURNING source_id, import_id, target_id, seen_by)
     SELECT source_id, import_id, target_id, seen_by, true AS fresh FROM fresh
     UNION ALL
     SELECT s.source_id, s.import_id, s.target_id, s.seen_by, false
     FROM ${sourceRows('$1', '$2', '$3', 'unnest($4::text[]) AS wanted(id)')}`,
    [workspaceId, fc.provider, resource, unique, fc.importId],
  );
  // A row committed by another transaction after that snapshot was taken is in neither half:
  // read again (two steppers of one run at once, a stale redelivery).
  const answered = new Set(rows.map((r) => r.source_id));
  const missing = unique.filter((id) => !answered.has(id));
  if (missing.length > 0) {
    const late = await fc.pool.query<Row>(
      `SELECT s.source_id, s.import_id, s.target_id, s.seen_by
       FROM ${sourceRows('$1', '$2', '$3', 'unnest($4::text[]) AS wanted(id)')}`,
      [workspaceId, fc.provider, resource, missing],
    );
    rows.push(...late.rows.map((r) => ({ ...r, fresh: false })));
  }
  const out = new Map<string, { claim: Claim; target: string | null }>();
  for (const r of rows) {
    const state: Claim = r.fresh
      ? 'fresh'
      : r.import_id !== fc.importId
        ? r.seen_by === fc.importId
          ? 'seen'
          : 'earlier'
        : r.target_id === null
          ? 'again'
          : 'done';
    out.set(r.source_id, { claim: state, target: r.target_id });
  }
  return out;
}

/**
 * What a page did to the source map: the rows made (source id → our id), the rows refused, and
 * the rows of earlier imports it counted. Recorded by `recordMarks` in the statement of the
 * checkpoint whose report counts them (worker.ts), so a page a crash cut is counted again, once.
 */
export interface PageMarks {
  resource: ImportResource;
  made: Map<string, string>;
  failed: string[];
  seen: string[];
}

/**
 * Records what the rows became and marks the earlier imports' rows counted; a failed row's claim
 * is let go, so a later import tries it again. With a `checkpoint` (a statement returning the
 * run's row, none when it is not taken), in one statement with it: the marks are written only
 * with the checkpoint, atomically, in one round trip, and the rows it returned are answered.
 */
export async function recordMarks(
  db: pg.Pool | pg.PoolClient,
  run: { workspaceId: string; provider: ProviderName; importId: string },
  marks: PageMarks | null,
  checkpoint: { sql: string; params: unknown[] } = { sql: 'SELECT 1', params: [] },
): Promise<pg.QueryResult> {
  if (!marks) return db.query(checkpoint.sql, checkpoint.params);
  const params = [
    ...checkpoint.params,
    run.workspaceId,
    run.provider,
    marks.resource,
    [...marks.made.keys()],
    [...marks.made.values()],
    marks.failed,
    run.importId,
    marks.seen,
  ];
  const $ = (i: number) => `$${checkpoint.params.length + i}`;
  const rowsOf = (wanted: string) => sourceRows($(1), $(2), $(3), wanted);
  return db.query(
    `WITH run AS (${checkpoint.sql}),
     made AS (
       UPDATE provider_import_sources t SET target_id = m.target
       FROM (SELECT s.row, wanted.target FROM ${rowsOf(`unnest(${$(4)}::text[], ${$(5)}::text[]) AS wanted(id, target)`)}) m
       WHERE t.ctid = m.row AND EXISTS (SELECT FROM run)),
     failed AS (
       DELETE FROM provider_import_sources t
       WHERE t.ctid = ANY(ARRAY(SELECT s.row FROM ${rowsOf(`unnest(${$(6)}::text[]) AS wanted(id)`)}))
         AND t.import_id = ${$(7)} AND EXISTS (SELECT FROM run)),
     seen AS (
       UPDATE provider_import_sources t SET seen_by = ${$(7)}
       WHERE t.ctid = ANY(ARRAY(SELECT s.row FROM ${rowsOf(`unnest(${$(8)}::text[]) AS wanted(id)`)}))
         AND EXISTS (SELECT FROM run))
     SELECT * FROM run`,
    params,
  );
}

/** Our ids of the provider's lists, as earlier pages (or imports) made them. */
async function audiencesOf(fc: FillContext, sourceIds: string[]): Promise<Map<string, string>> {
  const { rows } = await fc.pool.query<{ source_id: string; target_id: string }>(
    `SELECT source_id, target_id FROM provider_import_sources
     WHERE workspace_id = $1 AND provider = $2 AND resource = 'audiences' AND source_id = ANY($3::text[])
       AND target_id IS NOT NULL`,
    [fc.actor.workspaceId, fc.provider, sourceIds],
  );
  return new Map(rows.map((r) => [r.source_id, r.target_id]));
}

const failure = (error: unknown): { code: string; message: string } => {
  if (error instanceof DomainError) return { code: error.code, message: error.message };
  throw error;
};

/**
 * Applies one page of a resource through the resources' own commands (their rules and events,
 * `suppression.added` included) and answers the report with it counted. One row's refusal is a
 * report error; the rest of the page goes on.
 */
export async function applyPage(
  fc: FillContext,
  items: SourceItem[],
  report: ImportReport,
): Promise<{ report: ImportReport; marks: PageMarks | null }> {
  if (items.length === 0) return { report, marks: null };
  const resource = items[0]!.resource;
  if (resource === 'domains' || resource === 'api-keys') return { report: checklist(items, report), marks: null };
  const made = new Map<string, string>();
  const failed: string[] = [];
  const now = () => new Date().toISOString();
  // The claims, and what the page's rows share, read once: the audiences (with the default one,
  // which every contact joins) and our ids of the provider's lists. Independent: read at once.
  const [claims, audiences, listIds] = await Promise.all([
    claim(
      fc,
      resource,
      items.map((i) => i.sourceId),
    ),
    resource === 'contacts'
      ? ensureDefaultAudience(fc.commands, fc.actor, now())
      : resource === 'audiences'
        ? loadAudiences(fc.commands, fc.actor.workspaceId)
        : null,
    resource === 'contacts'
      ? audiencesOf(fc, [...new Set(items.flatMap((i) => (i as Item<'contacts'>).audienceSourceIds))])
      : new Map<string, string>(),
  ]);

  // What each row does to the report, applied in the page's order once all are done, so the
  // counts and errors read the same however the rows interleaved.
  const changes: ((r: ImportReport) => ImportReport)[][] = items.map(() => []);
  // Rows of earlier imports counted here: marked with this page's checkpoint (worker.ts).
  const seen = new Set<string>();
  /** Where a row stands before this page does anything with it. */
  const standing = (item: SourceItem): { claim: Claim; target: string | null } | undefined => {
    const claimed = claims.get(item.sourceId);
    if (
      claimed?.claim === 'earlier' &&
      item.resource === 'contacts' &&
      item.subscribed &&
      claimed.target === 'unsubscribed'
    )
      // Unsubscribed at an earlier run, subscribed now: imported now.
      return { claim: 'again', target: null };
    return claimed;
  };
  const joinedOf = (item: Item<'contacts'>): string[] =>
    item.audienceSourceIds.flatMap((s) => {
      const id = listIds.get(s);
      return id && audiences!.audiences.has(id) ? [id] : [];
    });
  // The page's new contacts or suppressions, made together before the rows run: a row takes its
  // outcome where it would have run its own command.
  const madeTogether = await makeTogether(
    fc,
    items,
    audiences,
    (item) => {
      const at = standing(item);
      return (at?.claim === 'fresh' || at?.claim === 'again') && (item.resource !== 'contacts' || item.subscribed);
    },
    joinedOf,
  );

  const applyItem = async (item: SourceItem, index: number): Promise<void> => {
    const change = changes[index]!;
    const count = (key: 'imported' | 'existing' | 'failed' | 'unsubscribed') =>
      change.push((r) => counted(r, item.resource as FilledResource, key));
    const error = (e: ImportReport['errors'][number]) => change.push((r) => withError(r, e));
    const claimed = standing(item);
    if (!claimed || claimed.claim === 'seen' || seen.has(item.sourceId)) return;
    if (claimed.claim === 'earlier') {
      // Unsubscribed at the provider is counted as such on every run.
      count(item.resource === 'contacts' && !item.subscribed ? 'unsubscribed' : 'existing');
      seen.add(item.sourceId);
      return;
    }
    // A row made earlier on this page (one address in two of the provider's lists) is done.
    const madeHere = made.get(item.sourceId);
    const at = madeHere === undefined ? claimed : { claim: 'done' as const, target: madeHere };
    // Made by this import already (on this page, or one read twice): only a contact has more to do, its lists.
    if (at.claim === 'done' && item.resource !== 'contacts') return;
    const isNew = at.claim === 'fresh';
    try {
      switch (item.resource) {
        case 'suppressions': {
          const together = madeTogether.get(index);
          const r = together
            ? outcome(together)
            : await addSuppression(fc.commands, fc.actor, suppressionInput(item), now()).then((a) => ({
                created: a.created,
                id: a.suppressionId,
              }));
          made.set(item.sourceId, r.id);
          count(r.created || !isNew ? 'imported' : 'existing');
          break;
        }
        case 'audiences': {
          const name = item.name.trim().slice(0, AUDIENCE_NAME_MAX) || item.sourceId;
          const same = [...audiences!.audiences.values()].find((a) => a.builtin === null && a.name === name);
          const id =
            same?.audienceId ??
            (await createAudience(
              fc.commands,
              fc.actor,
              { name, description: item.description, showOnPreferences: false },
              now(),
            ));
          made.set(item.sourceId, id);
          count(same && isNew ? 'existing' : 'imported');
          break;
        }
        case 'contacts': {
          const joined = joinedOf(item);
          if (!item.subscribed) {
            // Not imported; each address counted once per import.
            if (at.claim !== 'done') {
              made.set(item.sourceId, 'unsubscribed');
              count('unsubscribed');
            }
            break;
          }
          if (at.claim === 'done') {
            if (at.target === 'unsubscribed') break;
            for (const audienceId of joined)
              await addToAudience(fc.commands, fc.actor, { email: item.sourceId, audienceId }, now());
            break;
          }
          const together = madeTogether.get(index);
          const r = together
            ? outcome(together)
            : await createContact(fc.commands, fc.actor, contactInput(item, joined), now(), {
                audiences: audiences!,
                likelyNew: true,
              }).then((c) => ({ created: c.created, id: c.contactId }));
          if (!r.created)
            for (const audienceId of joined)
              await addToAudience(fc.commands, fc.actor, { email: item.sourceId, audienceId }, now());
          made.set(item.sourceId, r.id);
          count(r.created || !isNew ? 'imported' : 'existing');
          break;
        }
        case 'templates': {
          const name = item.name.trim().slice(0, TEMPLATE_NAME_MAX) || item.sourceId;
          const { state } = await loadState(
            fc.commands,
            templateNamesStream(fc.actor.workspaceId),
            templateNamesAggregate,
          );
          const same = entryByName(state, name);
          // A name taken here by a template of the user's stays theirs: this one is a report error.
          if (same && isNew) {
            failed.push(item.sourceId);
            count('failed');
            error({
              resource: 'templates',
              sourceId: item.sourceId,
              code: 'template_name_taken',
              message: `A template named ${JSON.stringify(name)} exists here already; rename one and import again.`,
            });
            break;
          }
          const id = same?.templateId ?? (await importTemplate(fc, item, name, now()));
          made.set(item.sourceId, id);
          count('imported');
          for (const warning of item.warnings)
            error({
              resource: 'templates',
              sourceId: item.sourceId,
              code: 'template_converted',
              message: warning,
            });
          break;
        }
        case 'webhooks': {
          const checked = fc.checkUrl(item.url);
          if (!checked.ok)
            throw new DomainError('invalid_parameter', `The receiver URL is refused here: ${checked.reason}.`, 'url');
          const url = checked.url.href;
          const { state } = await loadState(fc.commands, webhooksStream(fc.actor.workspaceId), webhooksAggregate);
          const same = [...state.endpoints.entries()].find(([, e]) => e.url === url);
          if (same && isNew) {
            made.set(item.sourceId, same[0]);
            count('existing');
            break;
          }
          let endpointId = same?.[0];
          if (!endpointId)
            endpointId = (
              await createWebhookEndpoint(
                fc.commands,
                fc.actor,
                {
                  url,
                  description: item.description,
                  eventTypes: item.eventTypes.length > 0 ? item.eventTypes : ['email.*'],
                  addressAllowlist: null,
                  domainAllowlist: null,
                },
                now(),
              )
            ).endpointId;
          // Switched off until the user turns it on: its receiver was written for the other provider.
          if (!same || same[1].enabled)
            await updateWebhookEndpoint(fc.commands, fc.actor, { endpointId, settings: {}, enabled: false }, now());
          made.set(item.sourceId, endpointId);
          count('imported');
          break;
        }
      }
    } catch (thrown) {
      const f =
        thrown instanceof z.ZodError
          ? { code: 'invalid_email_address', message: 'Not an email address.' }
          : failure(thrown);
      if (at.claim !== 'done') failed.push(item.sourceId);
      count('failed');
      error({ resource: item.resource, sourceId: item.sourceId, ...f });
    }
  };

  // Contacts and suppressions, the bulk of an import, each on a stream of its own address, go on
  // together. The rest are few and decide on one registry stream: one at a time.
  await bySourceInTurns(items, resource === 'contacts' || resource === 'suppressions' ? ROWS_IN_FLIGHT : 1, applyItem);
  let next = report;
  for (const change of changes) for (const apply of change) next = apply(next);
  return { report: next, marks: { resource, made, failed, seen: [...seen] } };
}

/** What making a row's contact or suppression came to: made now or there already, and our id. */
interface Made {
  created: boolean;
  id: string;
}

const outcome = <T>(settled: PromiseSettledResult<T>): T => {
  if (settled.status === 'rejected') throw settled.reason;
  return settled.value;
};

const suppressionInput = (item: Item<'suppressions'>): AddSuppressionInput => ({
  email: email.parse(item.email),
  reason: item.reason,
  detail: item.detail.slice(0, 500),
});

const contactInput = (item: Item<'contacts'>, joined: string[]): CreateContactInput => ({
  email: email.parse(item.email),
  name: item.name?.trim().slice(0, 200) || null,
  attributes: attributesOf(item.attributes),
  audienceIds: joined.slice(0, AUDIENCE_IDS_MAX),
  source: 'manual',
});

/**
 * Makes the contacts or suppressions of a page's rows that `toMake` picks (the first row of each
 * source id) in one command for them all (`createContacts`, `addSuppressions`: their appends go
 * out in one call, where one command a row took about ten), and answers each row's outcome by
 * its index. A row whose address is refused is left out: its own run refuses it.
 */
async function makeTogether(
  fc: FillContext,
  items: SourceItem[],
  audiences: AudiencesState | null,
  toMake: (item: SourceItem) => boolean,
  joinedOf: (item: Item<'contacts'>) => string[],
): Promise<Map<number, PromiseSettledResult<Made>>> {
  const rows: number[] = [];
  const contacts: CreateContactInput[] = [];
  const suppressions: AddSuppressionInput[] = [];
  const firsts = new Set<string>();
  items.forEach((item, index) => {
    if (firsts.has(item.sourceId)) return;
    firsts.add(item.sourceId);
    if (!toMake(item)) return;
    try {
      if (item.resource === 'contacts') contacts.push(contactInput(item, joinedOf(item)));
      else if (item.resource === 'suppressions') suppressions.push(suppressionInput(item));
      else return;
    } catch (error) {
      if (error instanceof z.ZodError) return;
      throw error;
    }
    rows.push(index);
  });
  const now = new Date().toISOString();
  const settled: PromiseSettledResult<Made>[] =
    contacts.length > 0
      ? (await createContacts(fc.commands, fc.actor, contacts, now, audiences!)).map((r) =>
          r.status === 'fulfilled'
            ? { status: 'fulfilled', value: { created: r.value.created, id: r.value.contactId } }
            : r,
        )
      : suppressions.length > 0
        ? (await addSuppressions(fc.commands, fc.actor, suppressions, now)).map((r) =>
            r.status === 'fulfilled'
              ? { status: 'fulfilled', value: { created: r.value.created, id: r.value.suppressionId } }
              : r,
          )
        : [];
  return new Map(settled.map((r, i) => [rows[i]!, r]));
}

/**
 * Runs `apply` over the items, at most `inFlight` at once; the rows of one source id one after
 * another in the page's order (a contact in two lists on one page joins the second once made).
 */
async function bySourceInTurns(
  items: SourceItem[],
  inFlight: number,
  apply: (item: SourceItem, index: number) => Promise<void>,
): Promise<void> {
  const bySource = new Map<string, number[]>();
  items.forEach((item, index) => {
    const rows = bySource.get(item.sourceId);
    if (rows) rows.push(index);
    else bySource.set(item.sourceId, [index]);
  });
  await inTurns([...bySource.values()], inFlight, async (group) => {
    for (const index of group) await apply(items[index]!, index);
  });
}

/** An html template with its variables declared as string props; published when the provider had it live and it can be. */
async function importTemplate(fc: FillContext, item: Item<'templates'>, name: string, now: string): Promise<string> {
  const content = {
    engine: 'html' as const,
    subject: item.subject.slice(0, 998),
    document: null,
    html: item.html,
    slots: [],
    props: item.variables.map((v) => ({ name: v, type: 'string', required: false, default: null, description: null })),
  };
  const input = { name, slug: null, description: `Imported from ${fc.provider}`, starter: null, content };
  const publish = item.live && item.subject.trim() !== '' && item.html.trim() !== '';
  try {
    return await createTemplate(fc.commands, fc.actor, { ...input, publish }, now);
  } catch (error) {
    // Unpublishable here (a rule of ours the provider does not have): kept as a draft to fix.
    if (!publish || !(error instanceof DomainError) || error.code !== 'invalid_template') throw error;
    return createTemplate(fc.commands, fc.actor, { ...input, publish: false }, now);
  }
}

/** The provider's custom fields within our limits: keys of our shape, 50 of them, values of 500 characters. */
function attributesOf(given: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(given)) {
    if (Object.keys(out).length >= ATTRIBUTES_MAX) break;
    const k = key.replace(/[^A-Za-z0-9_]/g, '_');
    if (!ATTRIBUTE_KEY.test(k) || value === '') continue;
    out[k] = value.slice(0, ATTRIBUTE_VALUE_MAX);
  }
  return out;
}

/** Domains and keys are not made here: each becomes a line of the checklist (once, however often a page repeats). */
function checklist(items: SourceItem[], report: ImportReport): ImportReport {
  const domains = [...report.checklist.domains];
  const apiKeys = [...report.checklist.apiKeys];
  for (const item of items) {
    if (item.resource === 'domains' && !domains.some((d) => d.name === item.name))
      domains.push({
        name: item.name,
        status: item.status,
        todo: `Add ${item.name} under Domains and publish the DNS records shown there; mail from it is refused until it is verified here.`,
      });
    if (item.resource === 'api-keys' && !apiKeys.some((k) => k.name === item.name))
      apiKeys.push({
        name: item.name,
        todo: `Create an API key here for what ${JSON.stringify(item.name)} was used for, with only the scopes it needs, and replace it in that system.`,
      });
  }
  return { ...report, checklist: { domains, apiKeys } };
}
