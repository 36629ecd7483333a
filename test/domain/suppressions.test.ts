import t from 'tap';
import { refusal } from '../support/refusal.ts';
import {
  decideAddSuppression,
  decideRemoveSuppression,
  type AddSuppression,
} from '../../domain/suppressions/decide.ts';
import { suppressionStream, type SuppressionEvent } from '../../domain/suppressions/events.ts';
import { suppressionAggregate, type SuppressionState } from '../../domain/suppressions/state.ts';

const NOW = '2026-01-01T00:00:00.000Z';
const LATER = '2026-01-02T00:00:00.000Z';
const ID1 = '00000000-0000-4000-8000-000000000001';
const ID2 = '00000000-0000-4000-8000-000000000002';

const given = (events: SuppressionEvent[]): SuppressionState =>
  events.reduce(suppressionAggregate.evolve, suppressionAggregate.initialState);

const add = (overrides: Partial<AddSuppression> = {}): AddSuppression => ({
  suppressionId: ID1,
  email: 'a@example.com',
  reason: 'manual',
  detail: null,
  now: NOW,
  ...overrides,
});

const added = (
  suppressionId: string,
  extra: Partial<Extract<SuppressionEvent, { type: 'SuppressionAdded' }>['data']> = {},
): SuppressionEvent => ({
  type: 'SuppressionAdded',
  data: {
    suppressionId,
    email: 'a@example.com',
    reason: 'manual',
    detail: null,
    removable: true,
    createdAt: NOW,
    ...extra,
  },
});

const removed = (suppressionId: string): SuppressionEvent => ({
  type: 'SuppressionRemoved',
  data: { suppressionId, email: 'a@example.com', removedAt: NOW },
});

t.test('one stream per address, whatever its case', async (t) => {
  t.equal(suppressionStream('ws_1', ' A@Example.COM '), 'ws-ws_1.suppression-a@example.com');
});

t.test('add: a new address gets an entry; only a bounce is permanent', async (t) => {
  t.same(decideAddSuppression(given([]), add()), [added(ID1)]);
  t.same(decideAddSuppression(given([]), add({ reason: 'complaint', detail: 'spam report' })), [
    added(ID1, { reason: 'complaint', detail: 'spam report', removable: true }),
  ]);
  t.same(decideAddSuppression(given([]), add({ reason: 'bounce', detail: '550 5.1.1' })), [
    added(ID1, { reason: 'bounce', detail: '550 5.1.1', removable: false }),
  ]);
});

t.test('add: an address suppressed already appends nothing, whatever either reason', async (t) => {
  t.same(decideAddSuppression(given([added(ID1)]), add({ suppressionId: ID2 })), []);
  t.same(decideAddSuppression(given([added(ID1)]), add({ suppressionId: ID2, reason: 'bounce' })), []);
  t.same(
    decideAddSuppression(given([added(ID1, { reason: 'bounce', removable: false })]), add({ suppressionId: ID2 })),
    [],
  );
});

t.test('add after removal: a new entry with the new id', async (t) => {
  t.same(decideAddSuppression(given([added(ID1), removed(ID1)]), add({ suppressionId: ID2, now: LATER })), [
    added(ID2, { createdAt: LATER }),
  ]);
});

t.test('remove: a removable entry goes', async (t) => {
  t.same(decideRemoveSuppression(given([added(ID1)]), { suppressionId: ID1, now: NOW }), [removed(ID1)]);
  t.same(decideRemoveSuppression(given([added(ID1, { reason: 'complaint' })]), { suppressionId: ID1, now: NOW }), [
    removed(ID1),
  ]);
});

t.test('remove: a hard bounce stays', async (t) => {
  const state = given([added(ID1, { reason: 'bounce', removable: false })]);
  t.match(
    refusal(() => decideRemoveSuppression(state, { suppressionId: ID1, now: NOW })),
    { code: 'suppression_not_removable', param: null },
  );
});

t.test('remove: an entry that is gone, or was replaced, is not found', async (t) => {
  t.match(
    refusal(() => decideRemoveSuppression(given([]), { suppressionId: ID1, now: NOW })),
    { code: 'resource_not_found' },
  );
  t.match(
    refusal(() => decideRemoveSuppression(given([added(ID1), removed(ID1)]), { suppressionId: ID1, now: NOW })),
    { code: 'resource_not_found' },
  );
  const replaced = given([added(ID1), removed(ID1), added(ID2)]);
  t.match(
    refusal(() => decideRemoveSuppression(replaced, { suppressionId: ID1, now: NOW })),
    { code: 'resource_not_found' },
  );
  t.same(decideRemoveSuppression(replaced, { suppressionId: ID2, now: NOW }), [removed(ID2)]);
});
