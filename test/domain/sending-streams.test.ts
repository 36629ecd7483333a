import t from 'tap';
import { assertLaneOpen, decidePauseStream, decideResumeStream, tripOf } from '../../domain/sending-streams/decide.ts';
import type { SendingStreamEvent } from '../../domain/sending-streams/events.ts';
import { sendingStreamsAggregate, type SendingStreamsState } from '../../domain/sending-streams/state.ts';
import { refusal } from '../support/refusal.ts';

const NOW = '2026-01-01T00:00:00.000Z';
const given = (events: SendingStreamEvent[]): SendingStreamsState =>
  events.reduce(sendingStreamsAggregate.evolve, sendingStreamsAggregate.initialState);
const counts = { sent: 100, bounced: 6, complained: 0 };
const pause = (s: SendingStreamsState, now = NOW) =>
  decidePauseStream(s, { stream: 'transactional', reason: 'bounce_rate', rate: 0.06, counts, now });
const paused = (pausedAt = NOW, lockedUntil: string | null = null): SendingStreamEvent => ({
  type: 'SendingStreamPaused',
  data: { stream: 'transactional', reason: 'bounce_rate', rate: 0.06, ...counts, lockedUntil, pausedAt },
});
const resumed = (resumedAt: string): SendingStreamEvent => ({
  type: 'SendingStreamResumed',
  data: { stream: 'transactional', resumedAt },
});
const hours = (n: number) => new Date(Date.parse(NOW) + n * 3_600_000).toISOString();

t.test('thresholds: past the rate on the minimum volume, not at it', async (t) => {
  t.equal(tripOf({ sent: 100, bounced: 5, complained: 0 }), null, '5 % is the line');
  t.match(tripOf({ sent: 100, bounced: 6, complained: 0 }), { reason: 'bounce_rate', rate: 0.06 });
  t.equal(tripOf({ sent: 99, bounced: 99, complained: 0 }), null, 'below 100 sent no bounce rate counts');
  t.equal(tripOf({ sent: 1000, bounced: 0, complained: 3 }), null, '0.3 % is the line');
  t.match(tripOf({ sent: 1000, bounced: 0, complained: 4 }), { reason: 'complaint_rate' });
  t.equal(tripOf({ sent: 999, bounced: 0, complained: 999 }), null, 'below 1,000 sent no complaint rate counts');
  t.match(tripOf({ sent: 1000, bounced: 60, complained: 4 }), { reason: 'bounce_rate' }, 'bounces first');
});

t.test('given an open lane, when it trips, then it pauses without a lock; paused, nothing more', async (t) => {
  const events = pause(given([]));
  t.same(events, [paused()]);
  t.same(pause(given(events)), [], 'a lane paused already');
  t.equal(refusal(() => assertLaneOpen(given(events), 'transactional')).code, 'stream_paused');
  t.doesNotThrow(() => assertLaneOpen(given(events), 'broadcast'), 'the other lane is open');
});

t.test('resume: an open lane decides nothing; a paused one resumes', async (t) => {
  t.same(decideResumeStream(given([]), { stream: 'transactional', now: NOW }), []);
  t.same(decideResumeStream(given([paused()]), { stream: 'transactional', now: hours(1) }), [resumed(hours(1))]);
});

t.test('a trip within a day of a resume locks the lane for a day', async (t) => {
  const history = [paused(), resumed(hours(1))];
  const relapse = pause(given(history), hours(20));
  t.same(relapse, [paused(hours(20), hours(44))]);
  const s = given([...history, ...relapse]);
  const locked = refusal(() => decideResumeStream(s, { stream: 'transactional', now: hours(43) }));
  t.match(locked, { code: 'stream_locked', param: 'stream' });
  t.same(decideResumeStream(s, { stream: 'transactional', now: hours(44) }), [resumed(hours(44))]);
  t.same(pause(given(history), hours(26)), [paused(hours(26))], 'a day later is a fresh trip');
});
