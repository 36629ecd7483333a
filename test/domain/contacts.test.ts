import t from 'tap';
import { refusal } from '../support/refusal.ts';
import {
  decideCreateContact,
  decideDeleteContact,
  decideJoinAudience,
  decideLeaveAudience,
  decideTouchContact,
  decideUpdateContact,
  type CreateContact,
} from '../../domain/contacts/decide.ts';
import { contactStream, type ContactEvent } from '../../domain/contacts/events.ts';
import { contactAggregate, type ContactState } from '../../domain/contacts/state.ts';

const NOW = '2026-01-01T00:00:00.000Z';
const LATER = '2026-01-02T00:00:00.000Z';
const C1 = 'con_000000000000000000000001';
const C2 = 'con_000000000000000000000002';
const DEF = 'aud_000000000000000000000000';
const A = 'aud_00000000000000000000000a';

const given = (events: ContactEvent[]): ContactState =>
  events.reduce(contactAggregate.evolve, contactAggregate.initialState);

const create = (o: Partial<CreateContact> = {}): CreateContact => ({
  contactId: C1,
  email: 'a@example.com',
  name: null,
  notes: null,
  attributes: {},
  source: 'manual',
  audienceIds: [DEF],
  now: NOW,
  ...o,
});

const created = (o: Partial<Extract<ContactEvent, { type: 'ContactCreated' }>['data']> = {}): ContactEvent => ({
  type: 'ContactCreated',
  data: {
    contactId: C1,
    email: 'a@example.com',
    name: null,
    notes: null,
    attributes: {},
    source: 'manual',
    audienceIds: [DEF],
    createdAt: NOW,
    ...o,
  },
});
const joined = (audienceId: string, at = NOW): ContactEvent => ({
  type: 'ContactJoinedAudience',
  data: { contactId: C1, email: 'a@example.com', audienceId, joinedAt: at },
});
const left = (audienceId: string, at = NOW): ContactEvent => ({
  type: 'ContactLeftAudience',
  data: { contactId: C1, email: 'a@example.com', audienceId, leftAt: at },
});
const deleted: ContactEvent = {
  type: 'ContactDeleted',
  data: { contactId: C1, email: 'a@example.com', deletedAt: NOW },
};

t.test('one stream per address, whatever its case', async (t) => {
  t.equal(contactStream('ws_1', ' A@Example.COM '), 'ws-ws_1.contact-a@example.com');
});

t.test('create: a new address enters the book with its audiences, once each', async (t) => {
  t.same(decideCreateContact(given([]), create({ audienceIds: [DEF, A, A, DEF] })), [
    created({ audienceIds: [DEF, A] }),
  ]);
  t.same(given([created({ audienceIds: [DEF, A] })]).contact!.audienceIds, [DEF, A]);
});

t.test('create: an address in the book already writes nothing; after a delete it is a new contact', async (t) => {
  t.same(decideCreateContact(given([created()]), create({ contactId: C2, name: 'Other' })), []);
  t.same(decideCreateContact(given([created(), deleted]), create({ contactId: C2, now: LATER })), [
    created({ contactId: C2, createdAt: LATER }),
  ]);
});

t.test('update: attributes merge key by key, null removes; omitted keeps; null clears', async (t) => {
  const state = given([created({ name: 'Ada', notes: 'n', attributes: { a: '1', b: '2' } })]);
  t.same(decideUpdateContact(state, { attributes: { b: null, c: '3' }, notes: null, now: LATER }), [
    {
      type: 'ContactUpdated',
      data: {
        contactId: C1,
        email: 'a@example.com',
        name: 'Ada',
        notes: null,
        attributes: { a: '1', c: '3' },
        updatedAt: LATER,
      },
    },
  ]);
  t.same(
    decideUpdateContact(state, { name: 'Ada', attributes: { a: '1', zz: null }, now: LATER }),
    [],
    'no change, no event',
  );
});

t.test('update: at most 50 attributes after the merge; a removal makes room in the same change', async (t) => {
  const fifty = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, 'v']));
  const state = given([created({ attributes: fifty })]);
  t.match(
    refusal(() => decideUpdateContact(state, { attributes: { extra: 'v' }, now: LATER })),
    { code: 'invalid_parameter', param: 'attributes' },
  );
  t.equal(decideUpdateContact(state, { attributes: { extra: 'v', k0: null }, now: LATER }).length, 1);
});

t.test('update, delete, join and leave of a missing contact: contact_not_found', async (t) => {
  for (const state of [given([]), given([created(), deleted])]) {
    t.match(
      refusal(() => decideUpdateContact(state, { name: 'x', now: NOW })),
      { code: 'contact_not_found', param: 'email' },
    );
    t.match(
      refusal(() => decideDeleteContact(state, { now: NOW })),
      { code: 'contact_not_found' },
    );
    t.match(
      refusal(() => decideJoinAudience(state, { audienceId: A, now: NOW })),
      { code: 'contact_not_found' },
    );
    t.match(
      refusal(() => decideLeaveAudience(state, { audienceId: A, now: NOW })),
      { code: 'contact_not_found' },
    );
  }
});

t.test('delete', async (t) => {
  t.same(decideDeleteContact(given([created()]), { now: NOW }), [deleted]);
  t.equal(given([created(), deleted]).contact, null);
});

t.test('membership: join once, leave once, rejoin after leaving', async (t) => {
  t.same(decideJoinAudience(given([created()]), { audienceId: A, now: LATER }), [joined(A, LATER)]);
  t.same(decideJoinAudience(given([created(), joined(A)]), { audienceId: A, now: LATER }), []);
  t.same(decideLeaveAudience(given([created(), joined(A)]), { audienceId: A, now: LATER }), [left(A, LATER)]);
  t.same(decideLeaveAudience(given([created()]), { audienceId: A, now: LATER }), []);
  t.same(decideJoinAudience(given([created(), joined(A), left(A)]), { audienceId: A, now: LATER }), [joined(A, LATER)]);
});

t.test('touch: lastSeenAt moves forward only; an address not in the book is left alone', async (t) => {
  const seen: ContactEvent = { type: 'ContactSeen', data: { contactId: C1, email: 'a@example.com', seenAt: LATER } };
  t.same(decideTouchContact(given([created()]), { seenAt: LATER }), [seen]);
  t.equal(given([created(), seen]).contact!.lastSeenAt, LATER);
  t.same(decideTouchContact(given([created(), seen]), { seenAt: NOW }), []);
  t.same(decideTouchContact(given([created(), seen]), { seenAt: LATER }), []);
  t.same(decideTouchContact(given([]), { seenAt: LATER }), []);
});
