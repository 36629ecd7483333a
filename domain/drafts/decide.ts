import { fail } from '../shared/errors.ts';
import type { DraftContent, DraftEvent } from './events.ts';
import { type DraftState, isLive } from './state.ts';

const notFound = (): never => fail('resource_not_found', 'No such draft.', 'id');

/** A create retried under the same id records nothing. */
export function decideCreateDraft(
  state: DraftState,
  cmd: { draftId: string; content: DraftContent; now: string },
): DraftEvent[] {
  if (state.content !== null) return [];
  return [{ type: 'DraftCreated', data: { draftId: cmd.draftId, content: cmd.content, at: cmd.now } }];
}

export function decideUpdateDraft(
  state: DraftState,
  cmd: { draftId: string; content: DraftContent; now: string },
): DraftEvent[] {
  if (!isLive(state)) return notFound();
  return [{ type: 'DraftUpdated', data: { draftId: cmd.draftId, content: cmd.content, at: cmd.now } }];
}

export function decideDeleteDraft(state: DraftState, cmd: { draftId: string; now: string }): DraftEvent[] {
  if (!isLive(state)) return notFound();
  return [{ type: 'DraftDeleted', data: { draftId: cmd.draftId, at: cmd.now } }];
}

/** Sent as `emailId`; the same send again (a retry after the message was accepted) records nothing. */
export function decideSendDraft(
  state: DraftState,
  cmd: { draftId: string; emailId: string; now: string },
): DraftEvent[] {
  if (state.emailId === cmd.emailId) return [];
  if (!isLive(state)) return notFound();
  return [{ type: 'DraftSent', data: { draftId: cmd.draftId, emailId: cmd.emailId, at: cmd.now } }];
}
