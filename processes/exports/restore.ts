import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createAddress, updateAddress } from '../../commands/addresses/handlers.ts';
import { addToAudience, createContact } from '../../commands/contacts/handlers.ts';
import { createAudience, ensureDefaultAudience } from '../../commands/audiences/handlers.ts';
import { addDomain, type DomainPorts } from '../../commands/domains/handlers.ts';
import type { Actor, CommandContext } from '../../commands/execute.ts';
import { newId } from '../../commands/ids.ts';
import { createLabel, labelsOfMailbox } from '../../commands/labels/handlers.ts';
import { createRule } from '../../commands/rules/handlers.ts';
import {
  archiveTemplate,
  createTemplate,
  editTemplate,
  publishTemplate,
  restoreTemplateVersion,
} from '../../commands/templates/handlers.ts';
import type { FilingLookups } from '../../commands/threads/handlers.ts';
import { fileImportedMessage, labelImportedThread } from '../../commands/threads/imports.ts';
import { createWorkspace } from '../../commands/workspaces/handlers.ts';
import { entryName, mboxFromTime, parseVCards } from '../../domain/exports/formats.ts';
import { placeMessage } from '../../domain/mailbox-imports/formats.ts';
import { DomainError } from '../../domain/shared/errors.ts';
import { digestId } from '../../domain/shared/ids.ts';
import type { Engine } from '../../domain/templates/events.ts';
import { type Mailbox, SETTABLE_LABELS, type SettableLabel } from '../../domain/threads/events.ts';
import type { BlobStore } from '../../infra/blobs/port.ts';
import { DEFAULT_ARCHIVE_LIMITS, ZipEntries } from '../../infra/imports/archives.ts';
import type { ArchiveLimits } from '../../infra/imports/port.ts';
import { parseMessage } from '../../infra/inbound/summary.ts';
import type { TextIndex } from '../../infra/search/port.ts';
import { DEFAULT_MAILBOX_IMPORT_OPTIONS, importKey } from '../mailbox-imports/worker.ts';
import { splitMbox } from '../mailbox-imports/split.ts';

export interface RestoreDeps {
  commands: CommandContext;
  blobs: BlobStore;
  texts: TextIndex;
  lookups: Pick<FilingLookups, 'threading'>;
  domains: DomainPorts;
  limits?: ArchiveLimits;
}

export interface RestoreResult {
  workspaceId: string;
  ownerUserId: string;
  apiKey: string;
  restored: Record<string, number>;
  /** What the export held that the new workspace does not, and why. */
  skipped: { what: string; why: string }[];
}

/** A JSON entry is read whole (the export writes each as one value); past this it is refused. */
const JSON_BYTES_MAX = 256 * 1024 * 1024;

interface ManifestEntry {
  path: string;
  bytes: number;
  sha256: string;
}

/** The restore stops before it writes anything: the file is no export, or not the export its manifest says. */
export class RestoreRefused extends Error {}

/**
 * The restore stopped after it had created its workspace (the database went, a defect, the file
 * changed under it): what it wrote stays in that workspace, which the operator is told of.
 */
export class RestoreFailed extends Error {
  constructor(
    readonly workspaceId: string,
    readonly reason: unknown,
  ) {
    super(reason instanceof Error ? reason.message : String(reason), { cause: reason });
  }
}

const hexOf = (raw: Buffer) => createHash('sha256').update(raw).digest('hex');

/** An entry's bytes as text, refused past JSON_BYTES_MAX (the parts are held: a JSON entry is parsed whole). */
async function textOf(path: string, source: AsyncIterable<Buffer>): Promise<string> {
  const parts: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of source) {
    bytes += chunk.length;
    if (bytes > JSON_BYTES_MAX) throw new RestoreRefused(`${path} is larger than ${JSON_BYTES_MAX} bytes.`);
    parts.push(chunk);
  }
  return Buffer.concat(parts).toString('utf8');
}

function parsed(path: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new RestoreRefused(`${path} is not JSON: ${(error as Error).message}`);
  }
}

const isManifestEntry = (e: unknown): e is ManifestEntry =>
  typeof e === 'object' &&
  e !== null &&
  typeof (e as ManifestEntry).path === 'string' &&
  Number.isSafeInteger((e as ManifestEntry).bytes) &&
  typeof (e as ManifestEntry).sha256 === 'string';

/**
 * The whole file checked before the restore writes anything, so a damaged or altered export is
 * refused with no workspace made: the manifest names every entry and no other, each with its size,
 * and each entry, streamed in the archive's order, hashes to the manifest's sha256; a JSON entry
 * is parsed too (held as the restore holds it, then dropped). The restore still hashes what it
 * reads: the file may change between the two passes.
 */
async function checkExport(zip: ZipEntries): Promise<{ exportId: string | null; entries: Map<string, ManifestEntry> }> {
  if (!zip.has('manifest.json'))
    throw new RestoreRefused('The archive has no manifest.json: it is no workspace export.');
  const manifest = parsed('manifest.json', await textOf('manifest.json', zip.read('manifest.json'))) as {
    object?: unknown;
    exportId?: unknown;
    entries?: unknown;
  } | null;
  if (manifest?.object !== 'workspace_export' || !Array.isArray(manifest.entries))
    throw new RestoreRefused('manifest.json is not the manifest of a workspace export.');
  const entries = new Map<string, ManifestEntry>();
  for (const e of manifest.entries) {
    if (!isManifestEntry(e))
      throw new RestoreRefused('manifest.json lists an entry without its path, bytes and sha256.');
    entries.set(e.path, e);
  }
  const inZip = new Map(zip.entries.map((e) => [e.name, e.bytes]));
  for (const e of entries.values()) {
    if (!inZip.has(e.path)) throw new RestoreRefused(`${e.path} is in the manifest but not in the archive.`);
    if (inZip.get(e.path) !== e.bytes)
      throw new RestoreRefused(`${e.path} holds ${inZip.get(e.path)} bytes; the manifest says ${e.bytes}.`);
  }
  for (const name of inZip.keys())
    if (name !== 'manifest.json' && !entries.has(name)) throw new RestoreRefused(`${name} is not in the manifest.`);
  for (const name of inZip.keys()) {
    if (name === 'manifest.json') continue;
    const hashed = checked(entries.get(name)!, zip.read(name));
    if (name.endsWith('.json')) parsed(name, await textOf(name, hashed));
    else for await (const _ of hashed);
  }
  return { exportId: typeof manifest.exportId === 'string' ? manifest.exportId : null, entries };
}

/** An entry's bytes, hashed as they pass and checked against the manifest at the end. */
async function* checked(expected: ManifestEntry, source: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  const hash = createHash('sha256');
  for await (const chunk of source) {
    hash.update(chunk);
    yield chunk;
  }
  if (hash.digest('hex') !== expected.sha256)
    throw new RestoreRefused(`${expected.path} does not match the manifest's sha256: the file is damaged.`);
}

/**
 * Restores a workspace export (processes/exports/worker.ts writes it) into a NEW workspace, through
 * the commands as any write goes, so events, read models and rules hold as for the api. The zip is
 * read with the import's archive rules and limits (ZipEntries): checked whole first (checkExport),
 * then read again entry by entry and each mbox as a stream, a message at a time. Mail is filed as
 * a mailbox import files it (quiet: no rules, forwards, notifications or webhooks). What cannot be
 * restored is listed in `skipped` with the reason; see docs/decisions/exports.md. `created` hears
 * of the workspace as soon as it exists, before anything else is written into it.
 */
export async function restoreWorkspace(
  deps: RestoreDeps,
  file: string,
  owner: { name: string | null; ownerEmail: string },
  created?: (workspaceId: string) => void,
): Promise<RestoreResult> {
  const size = (await stat(file)).size;
  // Each pass opens the zip anew, so each meters its unpacking against the limits on its own.
  const open = () =>
    ZipEntries.open(
      (start, end) => createReadStream(file, { start, end: end - 1 }),
      size,
      deps.limits ?? DEFAULT_ARCHIVE_LIMITS,
    );
  const checking = await open();
  let manifest: Awaited<ReturnType<typeof checkExport>>;
  try {
    manifest = await checkExport(checking);
  } finally {
    checking.close();
  }
  const zip = await open();
  try {
    return await new Restore(deps, zip, manifest.entries).run(manifest.exportId, owner, created);
  } finally {
    zip.close();
  }
}

interface AddressRow {
  address: string;
  domain: string;
  enabled: boolean;
  timeZone: string | null;
  username: string | null;
  forwards: unknown[];
}

class Restore {
  private readonly restored: Record<string, number> = {};
  private readonly skipped: { what: string; why: string }[] = [];
  private actor!: Actor;
  private readonly domainIds = new Map<string, string>();
  /** By address, and by the address's entry name (the mbox folders). */
  private readonly mailboxes = new Map<string, Mailbox>();
  private readonly byEntryName = new Map<string, Mailbox>();
  private readonly labelIds = new Map<string, string>();
  /** `<address entry name>/<label entry name>` to the new label and its mailbox. */
  private readonly labelFiles = new Map<string, { labelId: string; mailbox: Mailbox }>();
  private readonly templateIds = new Map<string, string>();
  /** Raw message hash in a mailbox to its new thread: custom-label mboxes name threads by their messages. */
  private readonly threadOf = new Map<string, string>();

  constructor(
    private readonly deps: RestoreDeps,
    private readonly zip: ZipEntries,
    private readonly manifest: Map<string, ManifestEntry>,
  ) {}

  private count(kind: string, n = 1) {
    this.restored[kind] = (this.restored[kind] ?? 0) + n;
  }

  private skip(what: string, why: string) {
    this.skipped.push({ what, why });
  }

  private now = () => new Date().toISOString();

  async run(
    exportId: string | null,
    owner: { name: string | null; ownerEmail: string },
    announce?: (workspaceId: string) => void,
  ): Promise<RestoreResult> {
    const created = await createWorkspace(this.deps.commands, {
      name: owner.name ?? `Restored ${exportId ?? 'export'}`,
      ownerEmail: owner.ownerEmail,
    });
    announce?.(created.workspaceId);
    this.actor = { workspaceId: created.workspaceId, kind: 'operator', id: null };
    try {
      await this.addresses();
      await this.labels();
      await this.templates();
      await this.contacts();
      await this.audiences();
      await this.mail();
      await this.rules();
    } catch (error) {
      throw new RestoreFailed(created.workspaceId, error);
    }
    if (this.zip.has('calendar/calendar.ics'))
      this.skip('calendar/calendar.ics', 'the service keeps no calendar events (the export holds an empty calendar)');
    return { ...created, restored: this.restored, skipped: this.skipped };
  }

  /** An entry's bytes, checked against the manifest again as they pass (checkExport made sure it lists them). */
  private read(path: string): AsyncGenerator<Buffer> {
    const expected = this.manifest.get(path);
    if (!expected) throw new RestoreRefused(`${path} is not in the manifest.`);
    return checked(expected, this.zip.read(path));
  }

  private text(path: string): Promise<string> {
    return textOf(path, this.read(path));
  }

  private async json(path: string): Promise<unknown> {
    return parsed(path, await this.text(path));
  }

  /** Runs a command; a refusal of the domain is a skip with its code, anything else stops the restore. */
  private async attempt<T>(what: string, write: () => Promise<T>): Promise<T | null> {
    try {
      return await write();
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      this.skip(what, `${error.code}: ${error.message}`);
      return null;
    }
  }

  /** Each domain is added to the new workspace when the service lets it (the name is free), then its addresses. */
  private async addresses(): Promise<void> {
    if (!this.zip.has('addresses/addresses.json')) return;
    const rows = (await this.json('addresses/addresses.json')) as AddressRow[];
    for (const domain of new Set(rows.map((r) => r.domain))) {
      const domainId = await this.attempt(`domain ${domain}`, () =>
        addDomain(this.deps.commands, this.deps.domains, this.actor, { domain }, this.now()),
      );
      if (domainId === null) continue;
      this.domainIds.set(domain, domainId);
      this.count('domains');
    }
    for (const r of rows) {
      const domainId = this.domainIds.get(r.domain);
      if (domainId === undefined) {
        this.skip(
          `address ${r.address}`,
          `its domain ${r.domain} could not be added (above), nor its mail, labels and rules`,
        );
        continue;
      }
      const input = {
        address: r.address,
        localPart: r.address.slice(0, r.address.lastIndexOf('@')),
        domain: r.domain,
        domainId,
        enabled: r.enabled,
      };
      const made = await this.attempt(`address ${r.address}`, () =>
        createAddress(this.deps.commands, this.actor, input, this.now()),
      );
      if (made === null) continue;
      if (r.timeZone)
        await updateAddress(this.deps.commands, this.actor, made.addressId, { timeZone: r.timeZone }, this.now());
      const mailbox: Mailbox = { addressId: made.addressId, address: r.address, domainId, domain: r.domain };
      this.mailboxes.set(r.address, mailbox);
      this.byEntryName.set(entryName(r.address), mailbox);
      this.count('addresses');
      if (r.username) this.skip(`login name of ${r.address}`, 'login names and app passwords are never exported');
      if (r.forwards.length > 0)
        this.skip(
          `${r.forwards.length} forward(s) of ${r.address}`,
          'a forward outside the workspace needs its consent mail again: add them through the api',
        );
    }
  }

  private async labels(): Promise<void> {
    if (!this.zip.has('labels/labels.json')) return;
    const rows = (await this.json('labels/labels.json')) as {
      id: string;
      address: string;
      name: string;
      color: string | null;
    }[];
    for (const l of rows) {
      const mailbox = this.mailboxes.get(l.address);
      if (!mailbox?.addressId) {
        this.skip(`label ${l.name} of ${l.address}`, 'its address is not restored');
        continue;
      }
      const made = await this.attempt(`label ${l.name} of ${l.address}`, () =>
        createLabel(
          this.deps.commands,
          this.actor,
          { owner: mailbox.addressId!, address: l.address, name: l.name, color: l.color },
          this.now(),
        ),
      );
      if (made === null) continue;
      this.labelIds.set(l.id, made.labelId);
      this.labelFiles.set(`${entryName(l.address)}/${entryName(l.name)}`, { labelId: made.labelId, mailbox });
      this.count('labels');
    }
  }

  /**
   * Every version in order, as its history was written: version 1 created, each later one an edit
   * of a published head (or a restore of the version it copies), each published as it was; then the
   * live version and the archive flag.
   */
  private async templates(): Promise<void> {
    // One pass over the entries: each template's folder and its version numbers.
    const versions = new Map<string, number[]>();
    for (const { name } of this.zip.entries) {
      const m = /^templates\/([^/]+)\/(?:template\.json|versions\/(\d+)\.json)$/.exec(name);
      if (!m) continue;
      const list = versions.get(m[1]!) ?? [];
      if (m[2] !== undefined) list.push(Number(m[2]));
      versions.set(m[1]!, list);
    }
    for (const [folder, found] of versions) {
      if (!this.zip.has(`templates/${folder}/template.json`)) {
        this.skip(`templates/${folder}`, 'versions without their template.json');
        continue;
      }
      const t = (await this.json(`templates/${folder}/template.json`)) as {
        id: string;
        name: string;
        slug: string | null;
        description: string | null;
        archived: boolean;
        publishedVersion: number | null;
      };
      const numbers = found.sort((a, b) => a - b);
      let templateId: string | null = null;
      let published: number | null = null;
      for (const [i, n] of numbers.entries()) {
        if (n !== i + 1) {
          this.skip(
            `template ${t.name}, versions ${numbers.slice(i).join(', ')}`,
            `version ${i + 1} was deleted in the source: later versions would be numbered otherwise`,
          );
          break;
        }
        const v = (await this.json(`templates/${folder}/versions/${n}.json`)) as {
          published: boolean;
          engine: Engine;
          subject: string;
          document: Record<string, unknown> | null;
          slots: Record<string, unknown>[];
          props: Record<string, unknown>[];
          restoredFrom: number | null;
          hasHtml: boolean;
        };
        const html = v.hasHtml ? await this.text(`templates/${folder}/versions/${n}.html`) : null;
        const content = {
          engine: v.engine,
          subject: v.subject,
          document: v.engine === 'blocks' ? v.document : null,
          html: v.engine === 'html' ? html : null,
          slots: v.slots,
          props: v.props,
        };
        const id: string | null = templateId;
        const wrote = await this.attempt(`template ${t.name}, version ${n}`, async () => {
          if (id === null) {
            templateId = await createTemplate(
              this.deps.commands,
              this.actor,
              { name: t.name, slug: t.slug, description: t.description, starter: null, content, publish: v.published },
              this.now(),
            );
            return true;
          }
          if (v.restoredFrom !== null) {
            await restoreTemplateVersion(
              this.deps.commands,
              this.actor,
              id,
              { ifMatch: null, version: v.restoredFrom },
              this.now(),
            );
            if (v.published)
              await publishTemplate(this.deps.commands, this.actor, id, { ifMatch: null, version: n }, this.now());
            return true;
          }
          await editTemplate(
            this.deps.commands,
            this.actor,
            id,
            {
              ifMatch: null,
              content: {
                engine: content.engine,
                subject: content.subject,
                slots: content.slots,
                props: content.props,
                ...(content.engine === 'blocks' ? { document: content.document ?? {} } : { html: content.html ?? '' }),
              },
              publish: v.published,
            },
            this.now(),
          );
          return true;
        });
        if (wrote === null) break;
        if (v.published) published = n;
        this.count('templateVersions');
      }
      if (templateId === null) continue;
      const restoredId: string = templateId;
      this.templateIds.set(t.id, restoredId);
      this.count('templates');
      if (t.publishedVersion !== null && t.publishedVersion !== published)
        await this.attempt(`template ${t.name}, live version ${t.publishedVersion}`, () =>
          publishTemplate(
            this.deps.commands,
            this.actor,
            restoredId,
            { ifMatch: null, version: t.publishedVersion },
            this.now(),
          ),
        );
      if (t.archived) await archiveTemplate(this.deps.commands, this.actor, restoredId, { ifMatch: null }, this.now());
    }
  }

  /** The vCards one at a time as the entry streams; every contact joins the default audience as any new one does. */
  private async contacts(): Promise<void> {
    if (!this.zip.has('contacts/contacts.vcf')) return;
    const audiences = await ensureDefaultAudience(this.deps.commands, this.actor, this.now());
    for await (const c of parseVCards(this.read('contacts/contacts.vcf'))) {
      const made = await this.attempt(`contact ${c.email}`, () =>
        createContact(this.deps.commands, this.actor, { ...c, source: 'manual' }, this.now(), {
          audiences,
          likelyNew: true,
        }),
      );
      if (made?.created) this.count('contacts');
    }
  }

  private async audiences(): Promise<void> {
    for (const e of this.zip.entries) {
      if (!/^audiences\/[^/]+\.json$/.test(e.name)) continue;
      const a = (await this.json(e.name)) as {
        name: string;
        description: string | null;
        showOnPreferences: boolean;
        builtin: string | null;
        members: { email: string }[];
      };
      // The default audience holds every contact: made with the workspace's first contact, joined by each.
      if (a.builtin !== null) continue;
      const audienceId = await this.attempt(`audience ${a.name}`, () =>
        createAudience(
          this.deps.commands,
          this.actor,
          { name: a.name, description: a.description, showOnPreferences: a.showOnPreferences },
          this.now(),
        ),
      );
      if (audienceId === null) continue;
      this.count('audiences');
      for (const m of a.members) {
        const joined = await this.attempt(`member ${m.email} of ${a.name}`, () =>
          addToAudience(this.deps.commands, this.actor, { email: m.email, audienceId }, this.now()),
        );
        if (joined) this.count('audienceMembers');
      }
    }
  }

  /**
   * The system-label mboxes first: each message filed as a mailbox import files it, under the
   * label its mbox names; then the custom-label mboxes, whose messages name the threads to label.
   */
  private async mail(): Promise<void> {
    const restoreId = newId.mailboxImport();
    let ordinal = 0;
    const custom: { path: string; address: string; label: string }[] = [];
    for (const e of this.zip.entries) {
      const m = /^mail\/([^/]+)\/(?:(labels)\/)?([^/]+)\.mbox$/.exec(e.name);
      if (!m) continue;
      const [, address, isCustom, label] = m as unknown as [string, string, string | undefined, string];
      if (isCustom) {
        custom.push({ path: e.name, address, label });
        continue;
      }
      const mailbox = this.byEntryName.get(address);
      if (!mailbox) {
        this.skip(e.name, 'its address is not restored (or it is mail of a catch-all, which is not restored)');
        continue;
      }
      if (label === 'drafts') {
        this.skip(e.name, 'drafts are not filed mail: an import never restores them');
        continue;
      }
      // Sent threads are filed as a mailbox import files sent mail: under archive, the messages `sent`.
      const wanted: SettableLabel = (SETTABLE_LABELS as readonly string[]).includes(label)
        ? (label as SettableLabel)
        : 'archive';
      for await (const message of this.messages(e.name)) {
        ordinal++;
        if (await this.file(restoreId, ordinal, mailbox, wanted, message)) this.count('messages');
      }
    }
    for (const c of custom) {
      const label = this.labelFiles.get(`${c.address}/${c.label}`);
      if (!label) {
        this.skip(c.path, 'its label is not restored');
        continue;
      }
      const threads = new Set<string>();
      for await (const message of this.messages(c.path)) {
        const threadId = this.threadOf.get(`${label.mailbox.address}\n${hexOf(message.raw)}`);
        if (threadId) threads.add(threadId);
      }
      const known = await labelsOfMailbox(this.deps.commands, this.actor.workspaceId, label.mailbox.addressId!);
      for (const threadId of threads)
        await labelImportedThread(this.deps.commands, this.actor, threadId, [label.labelId], known, this.now());
      this.count('labelledThreads', threads.size);
    }
  }

  /** The messages of one mbox entry with their `From ` lines' time: the mailbox import's splitter, a message at a time. */
  private async *messages(path: string): AsyncGenerator<{ raw: Buffer; at: string | null }> {
    const max = DEFAULT_MAILBOX_IMPORT_OPTIONS.messageBytesMax;
    for await (const m of splitMbox(this.read(path), 0, max)) {
      const at = m.fromLine === null ? null : mboxFromTime(m.fromLine);
      if (m.raw === null || m.raw.length === 0) {
        this.skip(`a message of ${path}`, `larger than ${max} bytes, as for a mailbox import`);
        continue;
      }
      yield { raw: m.raw, at };
    }
  }

  private async file(
    restoreId: string,
    ordinal: number,
    mailbox: Mailbox,
    wanted: SettableLabel,
    message: { raw: Buffer; at: string | null },
  ): Promise<boolean> {
    const { blobs, texts, commands, lookups } = this.deps;
    const stored = await blobs.put(message.raw);
    const parsed = await parseMessage(blobs, message.raw, message.raw.length);
    const s = parsed.summary;
    const header = (name: string) => s.headers.find((h) => h.name.toLowerCase() === name)?.value ?? null;
    const place = placeMessage(
      { labels: null, fromSelf: s.from?.address.toLowerCase() === mailbox.address, status: header('status') },
      { keepInbox: true, includeSpam: true, includeTrash: true },
    );
    // Without takeout labels a message is never a draft: only the type needs telling.
    if (place.skip || place.draft) return false;
    await texts.put(stored.sha256, parsed.searchText);
    const date = s.date !== null && !Number.isNaN(Date.parse(s.date)) ? s.date : this.now();
    const filed = await fileImportedMessage(commands, lookups, this.actor.workspaceId, mailbox, {
      messageId: digestId('importedMessage', `${restoreId}:${ordinal}`),
      importId: restoreId,
      // The mailbox import's own key, so a later mailbox import of the same mail meets it as a duplicate.
      importKey: importKey(s.messageId, stored.sha256),
      direction: place.direction,
      raw: stored,
      summary: s,
      unread: place.unread,
      at: message.at ?? date,
      wanted,
    });
    if (filed === null) {
      this.count('duplicateMessages');
      return false;
    }
    this.threadOf.set(`${mailbox.address}\n${stored.sha256}`, filed.threadId);
    return true;
  }

  private async rules(): Promise<void> {
    if (!this.zip.has('rules/rules.json')) return;
    const rows = (await this.json('rules/rules.json')) as {
      address: string;
      name: string;
      description: string | null;
      enabled: boolean;
      match: 'all' | 'any';
      conditions: never[];
      actions: { type: string; value: string | null }[];
      stopProcessing: boolean;
    }[];
    for (const r of rows) {
      const catchAll = r.address.startsWith('*@') ? this.domainIds.get(r.address.slice(2)) : undefined;
      const mailbox = this.mailboxes.get(r.address);
      const target = mailbox
        ? { address: r.address, addressId: mailbox.addressId, domainId: mailbox.domainId }
        : catchAll
          ? { address: r.address, addressId: null, domainId: catchAll }
          : null;
      if (!target) {
        this.skip(`rule ${r.name} of ${r.address}`, 'its mailbox is not restored');
        continue;
      }
      // Actions name labels and templates by id: the new workspace's ids stand in.
      const actions = r.actions.map((a) => ({
        ...a,
        value: a.value === null ? null : (this.labelIds.get(a.value) ?? this.templateIds.get(a.value) ?? a.value),
      }));
      const made = await this.attempt(`rule ${r.name} of ${r.address}`, () =>
        createRule(
          this.deps.commands,
          this.actor,
          {
            mailbox: target,
            rule: {
              name: r.name,
              description: r.description,
              enabled: r.enabled,
              match: r.match,
              conditions: r.conditions,
              actions: actions as never,
              stopProcessing: r.stopProcessing,
            },
          },
          this.now(),
        ),
      );
      if (made) this.count('rules');
    }
  }
}
