import type { SettableLabel } from '../threads/events.ts';

/**
 * Label actions over the labels every mailbox has: a thread is in exactly one of inbox, archive,
 * spam and trash, so `label` moves it there and `remove_label` takes it out of the one named
 * (out of the inbox: archived; out of archive, spam or trash: back to the inbox) and does nothing
 * when the thread is elsewhere.
 */
export function labelAfterRemoval(current: SettableLabel, removed: string): SettableLabel | null {
  if (current !== removed) return null;
  return current === 'inbox' ? 'archive' : 'inbox';
}
