import { fail } from '../shared/errors.ts';
import type { DraftContent, DraftEvent } from './events.ts';
import { type DraftState, isHeld, isLive } from './state.ts';

const notFound = (): never => fail('resource_not_found', 'No such draft.', 'id');
const held = (): never => fail('draft_sending', 'The draft is being sent; it can no longer change.', 'id');

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
  if (isHeld(state, cmd.now)) return held();
  return [{ type: 'DraftUpdated', data: { draftId: cmd.draftId, content: cmd.content, at: cmd.now } }];
}

export function decideDeleteDraft(state: DraftState, cmd: { draftId: string; now: string }): DraftEvent[] {
  if (!isLive(state)) return notFound();
  if (isHeld(state, cmd.now)) return held();
  return [{ type: 'DraftDeleted', data: { draftId: cmd.draftId, at: cmd.now } }];
}

/**
 * Holds the draft for its send as `emailId`, so an edit cannot be answered and then lost to a send
 * of the content before it. The same send again (a retry) takes the hold over; already sent as
 * `emailId`, nothing.
 */
export function decideStartDraftSend(
  state: DraftState,
  cmd: { draftId: string; emailId: string; now: string },
): DraftEvent[] {
  if (state.emailId === cmd.emailId) return [];
  if (!isLive(state)) return notFound();
  return [{ type: 'DraftSending', data: { draftId: cmd.draftId, emailId: cmd.emailId, at: cmd.now } }];
}

/** A refused send hands the draft back; a hold already gone (sent, lapsed and taken over) records nothing. */
export function decideRefuseDraftSend(
  state: DraftState,
  cmd: { draftId: string; emailId: string; now: string },
): DraftEvent[] {
  if (state.sending?.emailId !== cmd.emailId || state.gone) return [];
  return [{ type: 'DraftSendRefused', data: { draftId: cmd.draftId, emailId: cmd.emailId, at: cmd.now } }];
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
