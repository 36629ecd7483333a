import t from 'tap';
import { refusal } from '../support/refusal.ts';
import {
  AUDIENCES_MAX,
  decideCreateAudience,
  decideDeleteAudience,
  decideEnsureDefaultAudience,
  decideUpdateAudience,
  type CreateAudience,
} from '../../domain/audiences/decide.ts';
import { audiencesStream, type AudienceEvent } from '../../domain/audiences/events.ts';
import { audiencesAggregate, type AudiencesState } from '../../domain/audiences/state.ts';

const NOW = '2026-01-01T00:00:00.000Z';
const DEF = 'aud_000000000000000000000000';
const id = (n: number) => `aud_${n.toString(16).padStart(24, '0')}`;

const given = (events: AudienceEvent[]): AudiencesState =>
  events.reduce(audiencesAggregate.evolve, audiencesAggregate.initialState);
const defaultCreated: AudienceEvent = {
  type: 'AudienceCreated',
  data: {
    audienceId: DEF,
    name: 'All contacts',
    description: null,
    showOnPreferences: false,
    builtin: 'default',
    createdAt: NOW,
  },
};
const audienceCreated = (audienceId: string, name = 'A'): AudienceEvent => ({
  type: 'AudienceCreated',
  data: { audienceId, name, description: null, showOnPreferences: false, builtin: null, createdAt: NOW },
});
const create = (o: Partial<CreateAudience> = {}): CreateAudience => ({
  audienceId: id(1),
  defaultId: DEF,
  name: ' A ',
  description: null,
  showOnPreferences: false,
  now: NOW,
  ...o,
});

t.test('one stream per workspace', async (t) => {
  t.equal(audiencesStream('ws_1'), 'ws-ws_1.audiences');
});

t.test('the default audience is made once', async (t) => {
  t.same(decideEnsureDefaultAudience(given([]), { audienceId: DEF, now: NOW }), [defaultCreated]);
  t.same(decideEnsureDefaultAudience(given([defaultCreated]), { audienceId: id(9), now: NOW }), []);
  t.equal(given([defaultCreated]).defaultId, DEF);
});

t.test('create: makes the default audience too when there is none yet; names are trimmed', async (t) => {
  t.same(decideCreateAudience(given([]), create()), [defaultCreated, audienceCreated(id(1))]);
  t.same(decideCreateAudience(given([defaultCreated]), create()), [audienceCreated(id(1))]);
});

t.test('create: 100 besides the default one', async (t) => {
  const events = [defaultCreated, ...Array.from({ length: AUDIENCES_MAX - 1 }, (_, i) => audienceCreated(id(i + 1)))];
  t.equal(decideCreateAudience(given(events), create({ audienceId: id(500) })).length, 1, 'the 100th');
  events.push(audienceCreated(id(500)));
  t.match(
    refusal(() => decideCreateAudience(given(events), create({ audienceId: id(501) }))),
    { code: 'workspace_limit_reached', param: null },
  );
  events.push({ type: 'AudienceDeleted', data: { audienceId: id(1), deletedAt: NOW } });
  t.equal(decideCreateAudience(given(events), create({ audienceId: id(501) })).length, 1, 'a delete frees a place');
});

t.test('update: omitted keeps, null clears, no change no event', async (t) => {
  const state = given([
    defaultCreated,
    {
      ...audienceCreated(id(1)),
      data: { ...(audienceCreated(id(1)).data as any), description: 'd', showOnPreferences: true },
    },
  ]);
  t.same(decideUpdateAudience(state, { audienceId: id(1), name: ' B ', now: NOW }), [
    {
      type: 'AudienceUpdated',
      data: { audienceId: id(1), name: 'B', description: 'd', showOnPreferences: true, updatedAt: NOW },
    },
  ]);
  t.same(decideUpdateAudience(state, { audienceId: id(1), description: null, now: NOW }), [
    {
      type: 'AudienceUpdated',
      data: { audienceId: id(1), name: 'A', description: null, showOnPreferences: true, updatedAt: NOW },
    },
  ]);
  t.same(decideUpdateAudience(state, { audienceId: id(1), name: 'A', now: NOW }), []);
  t.match(
    refusal(() => decideUpdateAudience(state, { audienceId: id(7), name: 'x', now: NOW })),
    { code: 'audience_not_found', param: 'id' },
  );
});

t.test('delete: not the default one; an unknown one is not found', async (t) => {
  const state = given([defaultCreated, audienceCreated(id(1))]);
  t.same(decideDeleteAudience(state, { audienceId: id(1), now: NOW }), [
    { type: 'AudienceDeleted', data: { audienceId: id(1), deletedAt: NOW } },
  ]);
  t.match(
    refusal(() => decideDeleteAudience(state, { audienceId: DEF, now: NOW })),
    { code: 'builtin_audience', param: 'id' },
  );
  t.match(
    refusal(() => decideDeleteAudience(state, { audienceId: id(2), now: NOW })),
    { code: 'audience_not_found' },
  );
});
