import {
  decideArchiveTemplate,
  decideCreateTemplate,
  decideDeleteTemplate,
  decideDeleteTemplateVersion,
  decideEditTemplate,
  decidePublishTemplate,
  decideRestoreTemplateVersion,
  decideUnarchiveTemplate,
  type ContentPatch,
} from '../../domain/templates/decide.ts';
import { templateStream, type TemplateContent } from '../../domain/templates/events.ts';
import { templateAggregate, type TemplateState } from '../../domain/templates/state.ts';
import {
  copyName,
  decideRegisterTemplate,
  decideRenameTemplate,
  decideUnregisterTemplate,
} from '../../domain/template-names/decide.ts';
import { templateNamesStream } from '../../domain/template-names/events.ts';
import { templateNamesAggregate, type TemplateNamesState } from '../../domain/template-names/state.ts';
import { fail } from '../../domain/shared/errors.ts';
import { closeTemplateUses } from '../broadcasts/handlers.ts';
import { execute, loadState, type Actor, type CommandContext } from '../execute.ts';
import { newId } from '../ids.ts';

/**
 * What a template's ETag stands for (api/etags.ts writes and reads it): its stream revision and
 * how often it was renamed (names live in the workspace's template registry). A write given one
 * is refused with 409 when either has moved; null writes unconditionally.
 */
export interface TemplateRevision {
  revision: number;
  renames: number;
}

const registryOf = (ctx: CommandContext, workspaceId: string) =>
  loadState(ctx, templateNamesStream(workspaceId), templateNamesAggregate).then((r) => r.state);

/** Checks the renames half of an If-Match; the revision half is checked by the decider at append. */
function ifMatchRevision(
  tag: TemplateRevision | null,
  registry: TemplateNamesState,
  templateId: string,
): number | null {
  if (tag === null) return null;
  if ((registry.entries.get(templateId)?.renames ?? -1) !== tag.renames) {
    fail('version_conflict', 'The template changed after you read it; read it again and reapply your change.');
  }
  return tag.revision;
}

export interface CreateTemplateInput {
  name: string;
  slug: string | null;
  description: string | null;
  starter: string | null;
  content: TemplateContent;
  publish: boolean;
}

/**
 * The registry decides first (name, slug, place) without writing; then the template stream is
 * written; then the registry records the place. A template stream whose registration loses a race
 * is deleted again; one orphaned by a crash between the two writes is never listed or counted.
 */
export async function createTemplate(
  ctx: CommandContext,
  actor: Actor,
  input: CreateTemplateInput,
  now: string,
): Promise<string> {
  const templateId = newId.template();
  const register = (state: TemplateNamesState) =>
    decideRegisterTemplate(state, { templateId, name: input.name, slug: input.slug, now });
  register(await registryOf(ctx, actor.workspaceId));
  const stream = templateStream(actor.workspaceId, templateId);
  const versionId = newId.templateVersion();
  await execute(ctx, actor, stream, templateAggregate, (s) =>
    decideCreateTemplate(s, {
      templateId,
      versionId,
      description: input.description,
      starter: input.starter,
      content: input.content,
      publish: input.publish,
      sanitise: ctx.sanitiseHtml,
      now,
    }),
  );
  try {
    await execute(ctx, actor, templateNamesStream(actor.workspaceId), templateNamesAggregate, register);
  } catch (error) {
    await execute(ctx, actor, stream, templateAggregate, (s) => decideDeleteTemplate(s, { ifMatch: null, now }));
    throw error;
  }
  return templateId;
}

export interface EditTemplateInput {
  ifMatch: TemplateRevision | null;
  name?: string;
  description?: string | null;
  content: ContentPatch | null;
  publish: boolean;
}

/**
 * The name is checked before anything is written, so a taken name changes nothing; the content
 * goes first (it carries the If-Match revision), the rename after.
 */
export async function editTemplate(
  ctx: CommandContext,
  actor: Actor,
  templateId: string,
  input: EditTemplateInput,
  now: string,
): Promise<void> {
  const registry = await registryOf(ctx, actor.workspaceId);
  const ifMatch = ifMatchRevision(input.ifMatch, registry, templateId);
  const renames = input.ifMatch === null ? null : input.ifMatch.renames;
  const rename = (state: TemplateNamesState) =>
    input.name === undefined ? [] : decideRenameTemplate(state, { templateId, name: input.name, renames, now });
  rename(registry);
  const versionId = newId.templateVersion();
  await execute(ctx, actor, templateStream(actor.workspaceId, templateId), templateAggregate, (s) =>
    decideEditTemplate(s, {
      ifMatch,
      now,
      description: input.description,
      content: input.content,
      publish: input.publish,
      versionId,
      sanitise: ctx.sanitiseHtml,
    }),
  );
  if (input.name !== undefined)
    await execute(ctx, actor, templateNamesStream(actor.workspaceId), templateNamesAggregate, rename);
}

type Guarded = { ifMatch: TemplateRevision | null };

async function guarded(
  ctx: CommandContext,
  actor: Actor,
  templateId: string,
  tag: Guarded['ifMatch'],
  decide: (state: TemplateState, ifMatch: number | null) => ReturnType<typeof decideEditTemplate>,
): Promise<void> {
  const ifMatch = ifMatchRevision(tag, await registryOf(ctx, actor.workspaceId), templateId);
  await execute(ctx, actor, templateStream(actor.workspaceId, templateId), templateAggregate, (s) =>
    decide(s, ifMatch),
  );
}

export const publishTemplate = (
  ctx: CommandContext,
  actor: Actor,
  templateId: string,
  input: Guarded & { version: number | null },
  now: string,
) =>
  guarded(ctx, actor, templateId, input.ifMatch, (s, ifMatch) =>
    decidePublishTemplate(s, { ifMatch, now, version: input.version, sanitise: ctx.sanitiseHtml }),
  );

export const archiveTemplate = (ctx: CommandContext, actor: Actor, templateId: string, input: Guarded, now: string) =>
  guarded(ctx, actor, templateId, input.ifMatch, (s, ifMatch) => decideArchiveTemplate(s, { ifMatch, now }));

export const unarchiveTemplate = (ctx: CommandContext, actor: Actor, templateId: string, input: Guarded, now: string) =>
  guarded(ctx, actor, templateId, input.ifMatch, (s, ifMatch) => decideUnarchiveTemplate(s, { ifMatch, now }));

export const restoreTemplateVersion = (
  ctx: CommandContext,
  actor: Actor,
  templateId: string,
  input: Guarded & { version: number },
  now: string,
) =>
  guarded(ctx, actor, templateId, input.ifMatch, (s, ifMatch) =>
    decideRestoreTemplateVersion(s, { ifMatch, now, version: input.version, versionId: newId.templateVersion() }),
  );

export const deleteTemplateVersion = (
  ctx: CommandContext,
  actor: Actor,
  templateId: string,
  input: Guarded & { version: number },
  now: string,
) =>
  guarded(ctx, actor, templateId, input.ifMatch, (s, ifMatch) =>
    decideDeleteTemplateVersion(s, { ifMatch, now, version: input.version }),
  );

/**
 * The place is freed first: once unregistered the template is gone from every list and read, so
 * a crash before the template stream's own tombstone leaves nothing visible behind.
 */
export async function deleteTemplate(
  ctx: CommandContext,
  actor: Actor,
  templateId: string,
  input: Guarded,
  now: string,
): Promise<void> {
  const registry = await registryOf(ctx, actor.workspaceId);
  const ifMatch = ifMatchRevision(input.ifMatch, registry, templateId);
  const stream = templateStream(actor.workspaceId, templateId);
  const { state } = await loadState(ctx, stream, templateAggregate);
  decideDeleteTemplate(state, { ifMatch, now });
  // 409 `template_in_use` while a broadcast not yet started holds it; once closed, none can.
  await closeTemplateUses(ctx, actor, templateId, now);
  await execute(ctx, actor, templateNamesStream(actor.workspaceId), templateNamesAggregate, (s) =>
    decideUnregisterTemplate(s, { templateId, now }),
  );
  await execute(ctx, actor, stream, templateAggregate, (s) => decideDeleteTemplate(s, { ifMatch: null, now }));
}

/** A new template with the source's head content as its draft version 1. */
export async function duplicateTemplate(
  ctx: CommandContext,
  actor: Actor,
  templateId: string,
  input: { name?: string; slug?: string },
  now: string,
): Promise<string> {
  const registry = await registryOf(ctx, actor.workspaceId);
  const entry = registry.entries.get(templateId);
  const { state } = await loadState(ctx, templateStream(actor.workspaceId, templateId), templateAggregate);
  if (!entry || state.templateId === null || state.deleted) fail('resource_not_found', 'No such template.', 'id');
  const head = state.versions.get(state.latestVersion)!;
  return createTemplate(
    ctx,
    actor,
    {
      name: input.name ?? copyName(registry, entry.name),
      slug: input.slug ?? null,
      description: state.description,
      starter: null,
      content: {
        engine: head.engine,
        subject: head.subject,
        document: head.document,
        html: head.html,
        slots: head.slots,
        props: head.props,
      },
      publish: false,
    },
    now,
  );
}
