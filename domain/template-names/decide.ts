import { fail } from '../shared/errors.ts';
import type { TemplateNameEvent } from './events.ts';
import type { TemplateNameEntry, TemplateNamesState } from './state.ts';

/** Archived templates count; only deleting frees a place. */
export const TEMPLATES_MAX = 200;
export const SLUG_MAX = 64;
export const SLUG_PATTERN = /^[a-z0-9][a-z0-9-]*$/;

/** Names compare trimmed and without case. */
export const nameKey = (name: string) => name.trim().toLowerCase();

/** The slug a name gives: lower-case ASCII letters and digits joined by single hyphens. */
export function slugFromName(name: string): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, SLUG_MAX)
    .replace(/-+$/, '');
  return slug === '' ? 'template' : slug;
}

export function entryByName(state: TemplateNamesState, name: string): TemplateNameEntry | undefined {
  const key = nameKey(name);
  for (const e of state.entries.values()) if (nameKey(e.name) === key) return e;
  return undefined;
}

export function entryBySlug(state: TemplateNamesState, slug: string): TemplateNameEntry | undefined {
  for (const e of state.entries.values()) if (e.slug === slug) return e;
  return undefined;
}

export interface RegisterTemplate {
  templateId: string;
  name: string;
  /** The slug the caller asked for, or null to derive one from the name. */
  slug: string | null;
  now: string;
}

/**
 * A slug the caller chose must be free (409); a derived one takes the first free `-2`, `-3`, ...
 * suffix, since the caller never asked for that exact slug.
 */
export function decideRegisterTemplate(state: TemplateNamesState, cmd: RegisterTemplate): TemplateNameEvent[] {
  if (state.entries.has(cmd.templateId)) return [];
  if (state.entries.size >= TEMPLATES_MAX) {
    fail(
      'workspace_limit_reached',
      `A workspace holds at most ${TEMPLATES_MAX} templates, archived ones included; delete one to free a place.`,
    );
  }
  if (entryByName(state, cmd.name))
    fail('template_name_taken', 'Another template of the workspace has this name (ignoring case).', 'name');
  let slug: string;
  if (cmd.slug !== null) {
    if (entryBySlug(state, cmd.slug))
      fail('template_slug_taken', 'Another template of the workspace has this slug.', 'slug');
    slug = cmd.slug;
  } else {
    slug = freeSlug(state, slugFromName(cmd.name));
  }
  return [
    {
      type: 'TemplateRegistered',
      data: { templateId: cmd.templateId, name: cmd.name.trim(), slug, registeredAt: cmd.now },
    },
  ];
}

function freeSlug(state: TemplateNamesState, base: string): string {
  if (!entryBySlug(state, base)) return base;
  for (let n = 2; ; n++) {
    const suffix = `-${n}`;
    const candidate = base.slice(0, SLUG_MAX - suffix.length).replace(/-+$/, '') + suffix;
    if (!entryBySlug(state, candidate)) return candidate;
  }
}

/**
 * `renames`: the rename count of the caller's If-Match, or null to rename whatever it is. Checked
 * here, on the state the append is made on, so of concurrent renames under one ETag one wins.
 */
export function decideRenameTemplate(
  state: TemplateNamesState,
  cmd: { templateId: string; name: string; renames: number | null; now: string },
): TemplateNameEvent[] {
  const entry = state.entries.get(cmd.templateId);
  if (!entry) fail('resource_not_found', 'No such template.', 'id');
  if (cmd.renames !== null && cmd.renames !== entry.renames) {
    fail('version_conflict', 'The template changed after you read it; read it again and reapply your change.');
  }
  const name = cmd.name.trim();
  if (name === entry.name) return [];
  const holder = entryByName(state, name);
  if (holder && holder.templateId !== cmd.templateId)
    fail('template_name_taken', 'Another template of the workspace has this name (ignoring case).', 'name');
  return [{ type: 'TemplateRenamed', data: { templateId: cmd.templateId, name, renamedAt: cmd.now } }];
}

export function decideUnregisterTemplate(
  state: TemplateNamesState,
  cmd: { templateId: string; now: string },
): TemplateNameEvent[] {
  if (!state.entries.has(cmd.templateId)) return [];
  return [{ type: 'TemplateUnregistered', data: { templateId: cmd.templateId, unregisteredAt: cmd.now } }];
}

/** The first free copy name: `<name> (copy)`, then `<name> (copy 2)`, ... within 100 characters. */
export function copyName(state: TemplateNamesState, name: string, max = 100): string {
  for (let n = 1; ; n++) {
    const suffix = n === 1 ? ' (copy)' : ` (copy ${n})`;
    const candidate = name.slice(0, max - suffix.length).trimEnd() + suffix;
    if (!entryByName(state, candidate)) return candidate;
  }
}
