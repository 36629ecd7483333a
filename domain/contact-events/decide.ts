import type { ContactEventEvent } from './events.ts';

export type StoredEvent = ContactEventEvent['data'];

/** The positions of one request stream (one Idempotency-Key) already stored. */
export interface KeyState {
  byIndex: Map<number, StoredEvent>;
}

export const keyAggregate = {
  initialState: { byIndex: new Map() } as KeyState,
  evolve(state: KeyState, event: ContactEventEvent): KeyState {
    const byIndex = new Map(state.byIndex);
    byIndex.set(event.data.index, event.data);
    return { byIndex };
  },
};

/** One position of the request, as the api resolved it: ready to store, or already refused. */
export type Item =
  | { index: number; fingerprint: string; ready: Omit<StoredEvent, 'index' | 'fingerprint'> }
  | { index: number; fingerprint: string | null; refused: { code: string; message: string } };

export type Outcome =
  | { index: number; kind: 'stored'; event: StoredEvent }
  | { index: number; kind: 'replayed'; event: StoredEvent }
  | { index: number; kind: 'refused'; code: string; message: string };

/**
 * Per position: a position the key already holds is a replay when the fingerprints agree and
 * `idempotency_key_reuse` when they do not (checked before anything else, so a retry answers the
 * stored event even if its contact has gone since); otherwise a refused item stays refused (and is
 * not remembered: a corrected retry under the same key may store it), and a ready one is stored.
 */
export function decideRecord(state: KeyState, items: Item[]): { events: ContactEventEvent[]; outcomes: Outcome[] } {
  const events: ContactEventEvent[] = [];
  const outcomes: Outcome[] = [];
  for (const item of items) {
    const stored = state.byIndex.get(item.index);
    if (stored) {
      if (item.fingerprint !== null && stored.fingerprint === item.fingerprint) outcomes.push({ index: item.index, kind: 'replayed', event: stored });
      else outcomes.push({ index: item.index, kind: 'refused', code: 'idempotency_key_reuse', message: 'This Idempotency-Key was used for a different event at this position.' });
      continue;
    }
    if ('refused' in item) {
      outcomes.push({ index: item.index, kind: 'refused', ...item.refused });
      continue;
    }
    const event: ContactEventEvent = { type: 'ContactEventRecorded', data: { ...item.ready, index: item.index, fingerprint: item.fingerprint } };
    events.push(event);
    outcomes.push({ index: item.index, kind: 'stored', event: event.data });
  }
  return { events, outcomes };
}
