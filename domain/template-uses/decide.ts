import { fail } from '../shared/errors.ts';
import type { TemplateUseEvent } from './events.ts';
import type { TemplateUsesState } from './state.ts';

/** A template being deleted (the stream closed) is one the broadcast cannot use: 422 `template_not_found`. */
export function decideReserveTemplateUse(
  state: TemplateUsesState,
  cmd: { templateId: string; partition: string; broadcastId: string; now: string },
): TemplateUseEvent[] {
  if (state.closed) fail('template_not_found', 'No template of the workspace has this id or slug.', 'templateId');
  if (state.uses.has(cmd.broadcastId)) return [];
  return [
    {
      type: 'TemplateUseReserved',
      data: { templateId: cmd.templateId, partition: cmd.partition, broadcastId: cmd.broadcastId, reservedAt: cmd.now },
    },
  ];
}

export function decideReleaseTemplateUse(
  state: TemplateUsesState,
  cmd: { templateId: string; broadcastId: string; now: string },
): TemplateUseEvent[] {
  if (!state.uses.has(cmd.broadcastId)) return [];
  return [
    {
      type: 'TemplateUseReleased',
      data: { templateId: cmd.templateId, broadcastId: cmd.broadcastId, releasedAt: cmd.now },
    },
  ];
}

/**
 * Closes the template to new uses for its deletion: refused with 409 `template_in_use` while a
 * broadcast not yet started holds a use. `stale` are uses the command found over (their broadcast
 * started or was cancelled without releasing: a crash in between), released in the same append.
 */
export function decideCloseTemplateUses(
  state: TemplateUsesState,
  cmd: { templateId: string; stale: string[]; now: string },
): TemplateUseEvent[] {
  if (state.closed) return [];
  const stale = cmd.stale.filter((id) => state.uses.has(id));
  if (state.uses.size > stale.length)
    fail('template_in_use', 'A broadcast not yet started uses this template; cancel it or wait for its start.', null);
  return [
    ...stale.map(
      (broadcastId): TemplateUseEvent => ({
        type: 'TemplateUseReleased',
        data: { templateId: cmd.templateId, broadcastId, releasedAt: cmd.now },
      }),
    ),
    { type: 'TemplateUsesClosed', data: { templateId: cmd.templateId, closedAt: cmd.now } },
  ];
}
