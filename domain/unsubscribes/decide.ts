import { fail } from '../shared/errors.ts';
import type { UnsubscribeEvent, UnsubscribeSource } from './events.ts';
import { scopeOf, type UnsubscribeState } from './state.ts';

export interface Unsubscribe {
  unsubscribeId: string;
  email: string;
  contactId: string | null;
  audienceId: string | null;
  source: UnsubscribeSource;
  /** The message whose link it came through, when the link names one. */
  emailId?: string | null;
  now: string;
}

/** A scope already left stays as it was (its first source kept): a second click is a repeat. */
export function decideUnsubscribe(state: UnsubscribeState, cmd: Unsubscribe): UnsubscribeEvent[] {
  if (state.entries[scopeOf(cmd.audienceId)]) return [];
  return [
    {
      type: 'ContactUnsubscribed',
      data: {
        unsubscribeId: cmd.unsubscribeId,
        email: cmd.email,
        contactId: cmd.contactId,
        audienceId: cmd.audienceId,
        source: cmd.source,
        createdAt: cmd.now,
        ...(cmd.emailId ? { emailId: cmd.emailId } : {}),
      },
    },
  ];
}

/** The recipient rejoins a scope from the preferences page; rejoining what was not left is nothing. */
export function decideRejoin(
  state: UnsubscribeState,
  cmd: { audienceId: string | null; now: string },
): UnsubscribeEvent[] {
  const entry = state.entries[scopeOf(cmd.audienceId)];
  if (!entry) return [];
  return [
    {
      type: 'UnsubscribeRemoved',
      data: {
        unsubscribeId: entry.unsubscribeId,
        email: entry.email,
        audienceId: entry.audienceId,
        by: 'recipient',
        removedAt: cmd.now,
      },
    },
  ];
}

/**
 * The workspace removes an unsubscribe it recorded itself (`api`). What the recipient chose (one-click,
 * preferences) only the recipient undoes: 409 `unsubscribe_not_removable`.
 */
export function decideRemoveUnsubscribe(
  state: UnsubscribeState,
  cmd: { unsubscribeId: string; now: string },
): UnsubscribeEvent[] {
  const entry = Object.values(state.entries).find((e) => e.unsubscribeId === cmd.unsubscribeId);
  if (!entry) fail('resource_not_found', 'No such unsubscribe.', 'id');
  if (entry.source !== 'api')
    fail('unsubscribe_not_removable', 'The recipient unsubscribed themselves; only they can rejoin.');
  return [
    {
      type: 'UnsubscribeRemoved',
      data: {
        unsubscribeId: entry.unsubscribeId,
        email: entry.email,
        audienceId: entry.audienceId,
        by: 'workspace',
        removedAt: cmd.now,
      },
    },
  ];
}
