import { fail } from '../shared/errors.ts';
import { existing } from './decide.ts';
import { checkTemplateReferences } from './document.ts';
import type { TemplateContent, TemplateEvent } from './events.ts';
import { contentOf, type TemplateState } from './state.ts';

/** `design` makes blocks from a brief; `redesign` restyles the head's blocks as a brief asks. */
export type DesignKind = 'design' | 'redesign';

/** A brief: what the model is asked for, in plain language. */
export const BRIEF_MAX = 2000;

/**
 * The head version a design starts from (its slots and props are what the new blocks may use).
 * Redesign restyles blocks, so it needs a blocks head with at least one block: 422
 * `invalid_template`, `param` `engine`, before any AI action is spent.
 */
export function designSource(state: TemplateState, kind: DesignKind): TemplateContent {
  existing(state, null);
  const head = contentOf(state.versions.get(state.latestVersion)!);
  if (kind === 'redesign' && (head.engine !== 'blocks' || !((head.document?.body as unknown[])?.length ?? 0)))
    fail('invalid_template', 'Redesign restyles blocks: the head version has none. Use design to make them.', 'engine');
  return head;
}

/**
 * The designed document becomes a new draft version on top of the head, whatever the head was:
 * nothing is overwritten and nothing is published (sends keep the published version). The
 * document was validated as any client's would be; its placeholders must name the head's slots
 * and props, checked again here on the state appended to.
 */
export function decideDesignedVersion(
  state: TemplateState,
  cmd: { versionId: string; document: Record<string, unknown>; now: string },
): TemplateEvent[] {
  const templateId = existing(state, null);
  const head = contentOf(state.versions.get(state.latestVersion)!);
  const content: TemplateContent = { ...head, engine: 'blocks', document: cmd.document, html: null };
  const found = checkTemplateReferences(content);
  if (found) fail('invalid_template', found.message, found.path.join('.'));
  return [
    {
      type: 'TemplateVersionDrafted',
      data: {
        templateId,
        versionId: cmd.versionId,
        version: state.latestVersion + 1,
        ...content,
        restoredFrom: null,
        draftedAt: cmd.now,
      },
    },
  ];
}
