import { entriesOf, type ContactEventEvent, type StoredContactEvent } from './events.ts';

export type StoredEvent = StoredContactEvent;

/** The positions of one request stream (one Idempotency-Key) already stored. */
export interface KeyState {
  byIndex: Map<number, StoredEvent>;
}

export const keyAggregate = {
  initialState: { byIndex: new Map() } as KeyState,
  evolve(state: KeyState, event: ContactEventEvent): KeyState {
    const byIndex = new Map(state.byIndex);
    for (const e of entriesOf(event)) byIndex.set(e.index, e);
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
 * Everything stored by one request is one `ContactEventsRecorded` (all ready items share the
 * request's mode and time).
 */
export function decideRecordContactEvents(
  state: KeyState,
  items: Item[],
): { events: ContactEventEvent[]; outcomes: Outcome[] } {
  const stored: StoredEvent[] = [];
  const outcomes: Outcome[] = [];
  for (const item of items) {
    const held = state.byIndex.get(item.index);
    if (held) {
      if (item.fingerprint !== null && held.fingerprint === item.fingerprint)
        outcomes.push({ index: item.index, kind: 'replayed', event: held });
      else
        outcomes.push({
          index: item.index,
          kind: 'refused',
          code: 'idempotency_key_reuse',
          message: 'This Idempotency-Key was used for a different event at this position.',
        });
      continue;
    }
    if ('refused' in item) {
      outcomes.push({ index: item.index, kind: 'refused', ...item.refused });
      continue;
    }
    const event: StoredEvent = { ...item.ready, index: item.index, fingerprint: item.fingerprint };
    stored.push(event);
    outcomes.push({ index: item.index, kind: 'stored', event });
  }
  if (stored.length === 0) return { events: [], outcomes };
  const { mode, createdAt } = stored[0]!;
  const events: ContactEventEvent[] = [
    {
      type: 'ContactEventsRecorded',
      data: { mode, createdAt, events: stored.map(({ mode: _m, createdAt: _c, ...rest }) => rest) },
    },
  ];
  return { events, outcomes };
}
