import t from 'tap';
import { refusal } from '../support/refusal.ts';
import {
  decideRecordContactEvents,
  keyAggregate,
  type Item,
  type KeyState,
} from '../../domain/contact-events/decide.ts';
import { entriesOf, type ContactEventEvent } from '../../domain/contact-events/events.ts';
import { automationProperties, checkEvent, isBroken, stableJson } from '../../domain/contact-events/rules.ts';
import { decideCreateAutomation, decideUpdateAutomation } from '../../domain/automations/decide.ts';
import type { AutomationEvent } from '../../domain/automations/events.ts';
import { automationAggregate, type AutomationState } from '../../domain/automations/state.ts';
import { compile, matches } from '../../domain/automations/steps.ts';

const NOW = new Date('2026-06-01T12:00:00.000Z');
const ISO = NOW.toISOString();
const given = (events: ContactEventEvent[]): KeyState => events.reduce(keyAggregate.evolve, keyAggregate.initialState);
const ready = (index: number, fingerprint: string, name = 'x'): Item => ({
  index,
  fingerprint,
  ready: {
    eventId: `cev_${index}`,
    contactId: 'con_1',
    email: 'a@example.com',
    name,
    properties: {},
    occurredAt: ISO,
    mode: 'live',
    createdAt: ISO,
  },
});

t.test('record: new positions are stored in order, as one domain event for the request', async (t) => {
  const { events, outcomes } = decideRecordContactEvents(given([]), [ready(0, 'f0'), ready(1, 'f1')]);
  t.equal(events.length, 1);
  t.match(events[0], { type: 'ContactEventsRecorded', data: { mode: 'live', createdAt: ISO } });
  t.same(
    entriesOf(events[0]!).map((e) => [e.index, e.fingerprint, e.mode]),
    [
      [0, 'f0', 'live'],
      [1, 'f1', 'live'],
    ],
  );
  t.same(
    outcomes.map((o) => o.kind),
    ['stored', 'stored'],
  );
  t.same(
    decideRecordContactEvents(given([]), [
      { index: 0, fingerprint: null, refused: { code: 'invalid_event', message: 'm' } },
    ]).events,
    [],
    'nothing stored, nothing written',
  );
});

t.test('the first shape (one ContactEventRecorded per event) is still read', async (t) => {
  const old: ContactEventEvent = {
    type: 'ContactEventRecorded',
    data: { ...(ready(0, 'f0') as any).ready, index: 0, fingerprint: 'f0' },
  };
  t.match(decideRecordContactEvents(given([old]), [ready(0, 'f0')]).outcomes, [
    { kind: 'replayed', event: { eventId: 'cev_0', mode: 'live' } },
  ]);
});

t.test('record: a stored position replays with the same fingerprint, is key reuse with another', async (t) => {
  const state = given(decideRecordContactEvents(given([]), [ready(0, 'f0')]).events);
  const replay = decideRecordContactEvents(state, [
    { ...ready(0, 'f0'), ready: { ...(ready(0, 'f0') as any).ready, eventId: 'cev_new' } },
  ]);
  t.same(replay.events, [], 'a replay writes nothing');
  t.match(replay.outcomes, [{ kind: 'replayed', event: { eventId: 'cev_0' } }], 'it answers the stored event');
  t.match(decideRecordContactEvents(state, [ready(0, 'other')]).outcomes, [
    { kind: 'refused', code: 'idempotency_key_reuse' },
  ]);
  t.match(
    decideRecordContactEvents(state, [
      { index: 0, fingerprint: null, refused: { code: 'invalid_event', message: 'm' } },
    ]).outcomes,
    [{ kind: 'refused', code: 'idempotency_key_reuse' }],
  );
  t.match(
    decideRecordContactEvents(state, [
      { index: 0, fingerprint: 'f0', refused: { code: 'contact_not_found', message: 'm' } },
    ]).outcomes,
    [{ kind: 'replayed' }],
    'a replay wins over a contact gone since',
  );
});

t.test('record: a refused position is not remembered; a retry may store it', async (t) => {
  const first = decideRecordContactEvents(given([]), [
    ready(0, 'f0'),
    { index: 1, fingerprint: 'f1', refused: { code: 'contact_not_found', message: 'm' } },
  ]);
  t.same(entriesOf(first.events[0]!).length, 1);
  const retry = decideRecordContactEvents(given(first.events), [ready(0, 'f0'), ready(1, 'f1')]);
  t.same(
    retry.outcomes.map((o) => o.kind),
    ['replayed', 'stored'],
  );
  t.same(
    entriesOf(retry.events[0]!).map((e) => e.index),
    [1],
  );
});

t.test('rules of one event', async (t) => {
  const ok = checkEvent({ name: 'a', email: ' A@Example.COM ' }, NOW);
  t.notOk(isBroken(ok));
  t.match(ok, { email: 'a@example.com', occurredAt: ISO, properties: {} });
  const param = (input: object) => {
    const r = checkEvent({ name: 'a', email: 'a@example.com', ...input }, NOW);
    return isBroken(r) ? r.param : null;
  };
  t.equal(param({ name: 'a'.repeat(101) }), 'name');
  t.equal(param({ name: '-a' }), 'name');
  t.equal(param({ email: undefined }), 'email');
  t.equal(param({ email: undefined, contactId: 'con_1' }), null);
  t.equal(param({ occurredAt: new Date(NOW.getTime() + 61_000).toISOString() }), 'occurredAt');
  t.equal(param({ occurredAt: new Date(NOW.getTime() + 59_000).toISOString() }), null, 'a minute of clock skew');
  t.equal(param({ occurredAt: '2026-03-03T12:00:00Z' }), null, '90 days exactly');
  t.equal(param({ occurredAt: '2026-03-03T11:59:59Z' }), 'occurredAt', '90 days and a second');
  t.equal(param({ createContact: true, email: undefined, contactId: 'c' }), 'createContact');
  t.equal(param({ contactName: 'x'.repeat(201) }), 'contactName');
  t.equal(stableJson({ b: [1, { d: 1, c: 2 }], a: null }), '{"a":null,"b":[1,{"c":2,"d":1}]}');
  const a = checkEvent({ name: 'a', email: 'a@example.com', properties: { x: 1, y: 2 } }, NOW);
  const b = checkEvent(
    { name: 'a', email: 'A@example.com', properties: { y: 2, x: 1 } },
    new Date(NOW.getTime() + 1000),
  );
  t.equal((a as any).canonical, (b as any).canonical, 'the same event: key order and default occurredAt do not count');
  t.same(automationProperties({ email: 'x', a: 1 }), { a: 1 });
});

const givenAutomation = (events: AutomationEvent[]): AutomationState =>
  events.reduce(automationAggregate.evolve, automationAggregate.initialState);
const definition = { name: 'A', trigger: { event: 'go', filters: [] }, steps: [] };

t.test('automations: create once, edit only what changed, If-Match against the revision', async (t) => {
  const created = decideCreateAutomation(givenAutomation([]), {
    automationId: 'aut_1',
    definition,
    status: 'live',
    now: ISO,
  });
  t.match(created, [{ type: 'AutomationCreated', data: { automationId: 'aut_1', status: 'live' } }]);
  const state = givenAutomation(created);
  t.equal(state.revision, 0);
  t.same(
    decideCreateAutomation(state, { automationId: 'aut_1', definition, status: 'live', now: ISO }),
    [],
    'a retried create writes nothing',
  );
  t.same(decideUpdateAutomation(state, { ifMatch: 0, patch: { name: 'A' }, now: ISO }), []);
  t.match(decideUpdateAutomation(state, { ifMatch: 0, patch: { name: 'B' }, status: 'paused', now: ISO }), [
    { type: 'AutomationUpdated', data: { name: 'B' } },
    { type: 'AutomationPaused' },
  ]);
  t.equal(
    refusal(() => decideUpdateAutomation(state, { ifMatch: 1, patch: { name: 'B' }, now: ISO })).code,
    'version_conflict',
  );
  t.equal(
    refusal(() => decideUpdateAutomation(givenAutomation([]), { ifMatch: null, patch: {}, now: ISO })).code,
    'resource_not_found',
  );
  const paused = givenAutomation([
    ...created,
    { type: 'AutomationPaused', data: { automationId: 'aut_1', pausedAt: ISO } },
  ]);
  t.same(
    decideUpdateAutomation(paused, { ifMatch: null, patch: {}, status: 'paused', now: ISO }),
    [],
    'pausing twice writes nothing',
  );
  t.match(decideUpdateAutomation(paused, { ifMatch: 1, patch: {}, status: 'live', now: ISO }), [
    { type: 'AutomationResumed' },
  ]);
});

t.test('steps compile to one program counter; filters', async (t) => {
  const program = compile([
    { type: 'wait', minutes: 1 },
    {
      type: 'branch',
      ifEvent: 'c',
      then: [{ type: 'send', template: 'a' }],
      else: [
        { type: 'send', template: 'b' },
        { type: 'wait_for_event', name: 'e', timeoutMinutes: 5 },
      ],
    },
    { type: 'send', template: 'z' },
  ]);
  t.same(program, [
    { op: 'wait', minutes: 1 },
    { op: 'branch', ifEvent: 'c', withinMinutes: null, elseAt: 4 },
    { op: 'send', template: 'a', from: null, subject: null, data: {} },
    { op: 'jump', to: 6 },
    { op: 'send', template: 'b', from: null, subject: null, data: {} },
    { op: 'wait_for_event', name: 'e', timeoutMinutes: 5 },
    { op: 'send', template: 'z', from: null, subject: null, data: {} },
  ]);
  const p = { plan: 'pro', n: 3, email: 'x@example.com', nil: null };
  t.ok(
    matches(
      [
        { property: 'plan', op: 'equals', value: 'pro' },
        { property: 'n', op: 'gt', value: 2 },
      ],
      p,
    ),
  );
  t.notOk(matches([{ property: 'n', op: 'lt', value: 2 }], p));
  t.ok(
    matches(
      [
        { property: 'plan', op: 'contains', value: 'r' },
        { property: 'missing', op: 'not_exists' },
        { property: 'nil', op: 'not_exists' },
      ],
      p,
    ),
  );
  t.ok(
    matches(
      [
        { property: 'plan', op: 'not_equals', value: 'free' },
        { property: 'n', op: 'exists' },
      ],
      p,
    ),
  );
  t.notOk(matches([{ property: 'email', op: 'exists' }], p), 'email is never seen');
  t.ok(matches([], p));
});
