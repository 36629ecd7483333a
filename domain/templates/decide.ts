import { fail } from '../shared/errors.ts';
import { checkTemplateReferences } from './document.ts';
import type { Engine, TemplateContent, TemplateEvent } from './events.ts';
import { contentOf, statusOf, type TemplateState, type VersionState } from './state.ts';

/** The html engine's markup is sanitised when published; the function is pure, passed in by the command. */
export type Sanitise = (html: string) => string;

/** `ifMatch`: the stream revision the caller read (from its ETag), or null to write whatever changed since. */
interface Guarded {
  ifMatch: number | null;
  now: string;
}

export function existing(state: TemplateState, ifMatch: number | null): string {
  if (state.templateId === null || state.deleted) fail('resource_not_found', 'No such template.', 'id');
  if (ifMatch !== null && ifMatch !== state.revision) {
    fail('version_conflict', 'The template changed after you read it; read it again and reapply your change.');
  }
  return state.templateId;
}

function problem(path: (string | number)[], message: string): never {
  fail('invalid_template', message, path.join('.'));
}

/** Rules every saved version meets, draft or not: placeholders name declared slots and props. */
function checkSaved(content: TemplateContent): void {
  const found = checkTemplateReferences(content as Parameters<typeof checkTemplateReferences>[0]);
  if (found) problem(found.path, found.message);
}

/** What a version needs before it can be frozen and sent. */
function checkPublishable(v: TemplateContent): void {
  if (v.subject.trim() === '') problem(['subject'], 'A published version needs a subject.');
  if (v.engine === 'blocks' && !((v.document?.body as unknown[] | undefined)?.length ?? 0)) {
    problem(['document', 'body'], 'A published version needs at least one block.');
  }
  if (v.engine === 'html' && (v.html ?? '').trim() === '') problem(['html'], 'A published version needs html.');
}

function publishedEvent(
  templateId: string,
  v: VersionState | (TemplateContent & { version: number }),
  sanitise: Sanitise,
  now: string,
): TemplateEvent {
  checkPublishable(v);
  const sanitisedHtml =
    v.engine === 'html' ? ('sanitisedHtml' in v && v.sanitisedHtml) || sanitise(v.html ?? '') : null;
  return {
    type: 'TemplateVersionPublished',
    data: { templateId, version: v.version, sanitisedHtml, publishedAt: now },
  };
}

export interface CreateTemplate {
  templateId: string;
  versionId: string;
  description: string | null;
  starter: string | null;
  content: TemplateContent;
  publish: boolean;
  sanitise: Sanitise;
  now: string;
}

export function decideCreateTemplate(state: TemplateState, cmd: CreateTemplate): TemplateEvent[] {
  if (state.templateId !== null) return [];
  checkSaved(cmd.content);
  const events: TemplateEvent[] = [
    {
      type: 'TemplateCreated',
      data: { templateId: cmd.templateId, description: cmd.description, starter: cmd.starter, createdAt: cmd.now },
    },
    {
      type: 'TemplateVersionDrafted',
      data: {
        templateId: cmd.templateId,
        versionId: cmd.versionId,
        version: 1,
        ...cmd.content,
        restoredFrom: null,
        draftedAt: cmd.now,
      },
    },
  ];
  if (cmd.publish) events.push(publishedEvent(cmd.templateId, { ...cmd.content, version: 1 }, cmd.sanitise, cmd.now));
  return events;
}

/** The fields an edit may send; omitted ones keep the head version's value. */
export interface ContentPatch {
  engine?: Engine;
  subject?: string;
  document?: Record<string, unknown>;
  html?: string;
  slots?: Record<string, unknown>[];
  props?: Record<string, unknown>[];
}

export const EMPTY_DOCUMENT = { body: [] };

/**
 * The head's content with the patch applied. The engine follows what was sent (`html` means the
 * html engine, `document` the blocks engine) unless named; the other engine's body is dropped.
 */
export function mergeContent(head: TemplateContent, patch: ContentPatch): TemplateContent {
  const engine: Engine =
    patch.engine ?? (patch.html !== undefined ? 'html' : patch.document !== undefined ? 'blocks' : head.engine);
  if (engine === 'blocks' && patch.html !== undefined)
    problem(['html'], 'The blocks engine takes a `document`, not `html`.');
  if (engine === 'html' && patch.document !== undefined)
    problem(['document'], 'The html engine takes `html`, not a `document`.');
  return {
    engine,
    subject: patch.subject ?? head.subject,
    document:
      engine === 'blocks'
        ? (patch.document ?? (head.engine === 'blocks' ? head.document : null) ?? EMPTY_DOCUMENT)
        : null,
    html: engine === 'html' ? (patch.html ?? (head.engine === 'html' ? head.html : null) ?? '') : null,
    slots: patch.slots ?? head.slots,
    props: patch.props ?? head.props,
  };
}

const sameContent = (a: TemplateContent, b: TemplateContent) =>
  JSON.stringify(contentOf(a)) === JSON.stringify(contentOf(b));

export interface EditTemplate extends Guarded {
  description?: string | null;
  content: ContentPatch | null;
  publish: boolean;
  /** Id for the version minted when the head is already published. */
  versionId: string;
  sanitise: Sanitise;
}

/**
 * An edit of an unpublished head replaces it; an edit of a published head mints a new draft
 * version, so sends keep using the published one until the next publish.
 */
export function decideEditTemplate(state: TemplateState, cmd: EditTemplate): TemplateEvent[] {
  const templateId = existing(state, cmd.ifMatch);
  const events: TemplateEvent[] = [];
  if (cmd.description !== undefined && cmd.description !== state.description) {
    events.push({
      type: 'TemplateDescriptionChanged',
      data: { templateId, description: cmd.description, changedAt: cmd.now },
    });
  }
  let head = state.versions.get(state.latestVersion)!;
  if (cmd.content) {
    const content = mergeContent(head, cmd.content);
    if (!sameContent(content, head)) {
      checkSaved(content);
      if (head.published) {
        const version = state.latestVersion + 1;
        events.push({
          type: 'TemplateVersionDrafted',
          data: { templateId, versionId: cmd.versionId, version, ...content, restoredFrom: null, draftedAt: cmd.now },
        });
        head = { ...head, ...content, version, published: false, sanitisedHtml: null };
      } else {
        events.push({
          type: 'TemplateDraftEdited',
          data: { templateId, version: head.version, ...content, editedAt: cmd.now },
        });
        head = { ...head, ...content };
      }
    }
  }
  if (cmd.publish && !(head.published && state.publishedVersion === head.version)) {
    events.push(publishedEvent(templateId, head, cmd.sanitise, cmd.now));
  }
  return events;
}

function versionOf(state: TemplateState, version: number): VersionState {
  const v = state.versions.get(version);
  if (!v) fail('template_version_not_found', `The template has no version ${version}.`, 'version');
  return v;
}

/**
 * Publishing freezes a version and makes it the one sends use. Publishing an older published
 * version makes it live again (a rollback); it stays as it was frozen.
 */
export function decidePublishTemplate(
  state: TemplateState,
  cmd: Guarded & { version: number | null; sanitise: Sanitise },
): TemplateEvent[] {
  const templateId = existing(state, cmd.ifMatch);
  const v = versionOf(state, cmd.version ?? state.latestVersion);
  if (state.publishedVersion === v.version) return [];
  return [publishedEvent(templateId, v, cmd.sanitise, cmd.now)];
}

export function decideArchiveTemplate(state: TemplateState, cmd: Guarded): TemplateEvent[] {
  const templateId = existing(state, cmd.ifMatch);
  return state.archived ? [] : [{ type: 'TemplateArchived', data: { templateId, archivedAt: cmd.now } }];
}

export function decideUnarchiveTemplate(state: TemplateState, cmd: Guarded): TemplateEvent[] {
  const templateId = existing(state, cmd.ifMatch);
  return state.archived ? [{ type: 'TemplateUnarchived', data: { templateId, unarchivedAt: cmd.now } }] : [];
}

/** An old version's content comes back as a new draft head; the old version itself is untouched. */
export function decideRestoreTemplateVersion(
  state: TemplateState,
  cmd: Guarded & { version: number; versionId: string },
): TemplateEvent[] {
  const templateId = existing(state, cmd.ifMatch);
  const v = versionOf(state, cmd.version);
  const version = state.latestVersion + 1;
  return [
    {
      type: 'TemplateVersionDrafted',
      data: {
        templateId,
        versionId: cmd.versionId,
        version,
        ...contentOf(v),
        restoredFrom: v.version,
        draftedAt: cmd.now,
      },
    },
  ];
}

/** The only version, the live one and the head (the one being edited) stay. */
export function decideDeleteTemplateVersion(state: TemplateState, cmd: Guarded & { version: number }): TemplateEvent[] {
  const templateId = existing(state, cmd.ifMatch);
  const v = versionOf(state, cmd.version);
  if (state.versions.size === 1)
    fail('template_version_not_deletable', 'A template keeps at least one version.', 'version');
  if (state.publishedVersion === v.version)
    fail('template_version_not_deletable', 'This version is the one sends use; publish another first.', 'version');
  if (state.latestVersion === v.version)
    fail('template_version_not_deletable', 'This version is the one being edited.', 'version');
  return [{ type: 'TemplateVersionDeleted', data: { templateId, version: v.version, deletedAt: cmd.now } }];
}

export function decideDeleteTemplate(state: TemplateState, cmd: Guarded): TemplateEvent[] {
  const templateId = existing(state, cmd.ifMatch);
  return [{ type: 'TemplateDeleted', data: { templateId, deletedAt: cmd.now } }];
}

/**
 * What a send may use: the published version of a template that is not archived. Every send path
 * (render for sending now, POST /emails and POST /templates/{id}/send later) goes through here.
 */
export function sendableVersion(t: { archived: boolean; publishedVersion: number | null }): number {
  if (statusOf(t) === 'archived')
    fail('template_archived', 'The template is archived; unarchive it to send with it.', 'template');
  if (t.publishedVersion === null)
    fail('template_not_published', 'The template has no published version yet.', 'template');
  return t.publishedVersion;
}
