import t from 'tap';
import { refusal } from '../support/refusal.ts';
import {
  decideRejoin,
  decideRemoveUnsubscribe,
  decideUnsubscribe,
  type Unsubscribe,
} from '../../domain/unsubscribes/decide.ts';
import { unsubscribeStream, type UnsubscribeEvent } from '../../domain/unsubscribes/events.ts';
import { unsubscribeAggregate, type UnsubscribeState } from '../../domain/unsubscribes/state.ts';

const NOW = '2026-01-01T00:00:00.000Z';
const LATER = '2026-01-02T00:00:00.000Z';

const given = (events: UnsubscribeEvent[]): UnsubscribeState =>
  events.reduce(unsubscribeAggregate.evolve, unsubscribeAggregate.initialState);

const cmd = (overrides: Partial<Unsubscribe> = {}): Unsubscribe => ({
  unsubscribeId: 'uns_1',
  email: 'a@example.com',
  contactId: 'con_1',
  audienceId: null,
  source: 'one-click',
  now: NOW,
  ...overrides,
});

const unsubscribed = (overrides: Partial<Unsubscribe> = {}): UnsubscribeEvent => {
  const { now, ...data } = cmd(overrides);
  return { type: 'ContactUnsubscribed', data: { ...data, createdAt: now } };
};

const removed = (
  unsubscribeId: string,
  audienceId: string | null,
  by: 'recipient' | 'workspace',
): UnsubscribeEvent => ({
  type: 'UnsubscribeRemoved',
  data: { unsubscribeId, email: 'a@example.com', audienceId, by, removedAt: LATER },
});

t.test('one stream per address, whatever its case', async (t) => {
  t.equal(unsubscribeStream('ws_1', ' A@Example.COM '), 'ws-ws_1.unsubscribe-a@example.com');
});

t.test('unsubscribe: each scope once; a repeat keeps the first source', async (t) => {
  t.same(decideUnsubscribe(given([]), cmd()), [unsubscribed()]);
  t.same(decideUnsubscribe(given([unsubscribed()]), cmd({ unsubscribeId: 'uns_2', source: 'api' })), []);
  t.same(decideUnsubscribe(given([unsubscribed()]), cmd({ unsubscribeId: 'uns_2', audienceId: 'aud_1' })), [
    unsubscribed({ unsubscribeId: 'uns_2', audienceId: 'aud_1' }),
  ]);
});

t.test('rejoin: the recipient undoes a scope; rejoining what was not left is nothing', async (t) => {
  const state = given([unsubscribed(), unsubscribed({ unsubscribeId: 'uns_2', audienceId: 'aud_1' })]);
  t.same(decideRejoin(state, { audienceId: 'aud_1', now: LATER }), [removed('uns_2', 'aud_1', 'recipient')]);
  t.same(decideRejoin(state, { audienceId: 'aud_9', now: LATER }), []);
  t.same(
    decideUnsubscribe(given([unsubscribed(), removed('uns_1', null, 'recipient')]), cmd({ unsubscribeId: 'uns_3' })),
    [unsubscribed({ unsubscribeId: 'uns_3' })],
  );
});

t.test('remove: only what the workspace recorded; the recipient’s own choice stays', async (t) => {
  t.same(decideRemoveUnsubscribe(given([unsubscribed({ source: 'api' })]), { unsubscribeId: 'uns_1', now: LATER }), [
    removed('uns_1', null, 'workspace'),
  ]);
  for (const source of ['one-click', 'preferences'] as const)
    t.equal(
      refusal(() => decideRemoveUnsubscribe(given([unsubscribed({ source })]), { unsubscribeId: 'uns_1', now: LATER }))
        .code,
      'unsubscribe_not_removable',
    );
  t.equal(
    refusal(() => decideRemoveUnsubscribe(given([]), { unsubscribeId: 'uns_1', now: LATER })).code,
    'resource_not_found',
  );
});
