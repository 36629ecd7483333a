import t from 'tap';
import { refusal } from '../support/refusal.ts';
import {
  decideCreateAutomation,
  decideDeleteAutomation,
  decideUpdateAutomation,
  type Definition,
} from '../../domain/automations/decide.ts';
import type { AutomationEvent } from '../../domain/automations/events.ts';
import { automationAggregate, type AutomationState } from '../../domain/automations/state.ts';

const NOW = '2026-01-01T00:00:00.000Z';
const given = (events: AutomationEvent[]): AutomationState =>
  events.reduce(automationAggregate.evolve, automationAggregate.initialState);
const definition: Definition = {
  name: 'Welcome',
  trigger: { event: 'signed_up', filters: [] },
  steps: [{ type: 'wait', minutes: 5 }],
};
const created: AutomationEvent = {
  type: 'AutomationCreated',
  data: { automationId: 'aut_1', ...definition, status: 'live', createdAt: NOW },
};
const deleted: AutomationEvent = { type: 'AutomationDeleted', data: { automationId: 'aut_1', deletedAt: NOW } };

t.test('delete: an existing automation, on the revision read when If-Match is given', async (t) => {
  t.same(decideDeleteAutomation(given([created]), { ifMatch: null, now: NOW }), [deleted]);
  t.same(decideDeleteAutomation(given([created]), { ifMatch: 0, now: NOW }), [deleted]);
  const paused = given([created, { type: 'AutomationPaused', data: { automationId: 'aut_1', pausedAt: NOW } }]);
  t.same(decideDeleteAutomation(paused, { ifMatch: 1, now: NOW }), [deleted], 'a paused one too');
  t.equal(
    refusal(() => decideDeleteAutomation(paused, { ifMatch: 0, now: NOW })).code,
    'version_conflict',
    'a stale tag',
  );
});

t.test('delete: unknown and already deleted are 404', async (t) => {
  t.match(
    refusal(() => decideDeleteAutomation(given([]), { ifMatch: null, now: NOW })),
    { code: 'resource_not_found', param: 'id' },
  );
  t.match(
    refusal(() => decideDeleteAutomation(given([created, deleted]), { ifMatch: null, now: NOW })),
    { code: 'resource_not_found', param: 'id' },
    'the second of two deletes',
  );
  t.match(
    refusal(() => decideDeleteAutomation(given([created, deleted]), { ifMatch: 1, now: NOW })),
    { code: 'resource_not_found' },
    'even with the tag of the deletion',
  );
});

t.test('after delete: no update, pause or resume; a retried create writes nothing', async (t) => {
  const gone = given([created, deleted]);
  t.equal(
    refusal(() => decideUpdateAutomation(gone, { ifMatch: null, patch: { name: 'x' }, now: NOW })).code,
    'resource_not_found',
  );
  t.equal(
    refusal(() => decideUpdateAutomation(gone, { ifMatch: null, patch: {}, status: 'paused', now: NOW })).code,
    'resource_not_found',
  );
  t.equal(
    refusal(() => decideUpdateAutomation(gone, { ifMatch: null, patch: {}, status: 'live', now: NOW })).code,
    'resource_not_found',
  );
  t.same(decideCreateAutomation(gone, { automationId: 'aut_1', definition, status: 'live', now: NOW }), []);
});
