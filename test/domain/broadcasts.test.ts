import t from 'tap';
import {
  decideCancelBroadcast,
  decideCompleteBroadcast,
  decideCreateBroadcast,
  decideStartBroadcast,
} from '../../domain/broadcasts/decide.ts';
import type { BroadcastEvent } from '../../domain/broadcasts/events.ts';
import { broadcastAggregate, type BroadcastDefinition } from '../../domain/broadcasts/state.ts';
import {
  decideCloseTemplateUses,
  decideReleaseTemplateUse,
  decideReserveTemplateUse,
} from '../../domain/template-uses/decide.ts';
import type { TemplateUseEvent } from '../../domain/template-uses/events.ts';
import { templateUsesAggregate } from '../../domain/template-uses/state.ts';
import { refusal } from '../support/refusal.ts';

const NOW = '2026-01-01T00:00:00.000Z';
const definition: BroadcastDefinition = {
  broadcastId: 'bc_000000000000000000000001',
  name: null,
  from: 'a@example.com',
  templateId: 'tpl_000000000000000000000001',
  subject: null,
  audienceIds: ['aud_000000000000000000000001'],
  scheduledAt: null,
  createdAt: NOW,
};
const given = (events: BroadcastEvent[]) => events.reduce(broadcastAggregate.evolve, broadcastAggregate.initialState);
const created: BroadcastEvent = { type: 'BroadcastCreated', data: definition };
const started: BroadcastEvent = {
  type: 'BroadcastStarted',
  data: { broadcastId: definition.broadcastId, recipients: 3, startedAt: NOW },
};
const cancelled: BroadcastEvent = {
  type: 'BroadcastCancelled',
  data: { broadcastId: definition.broadcastId, cancelledAt: NOW },
};

t.test('create, start, complete; repeats decide nothing', async (t) => {
  t.same(decideCreateBroadcast(given([]), definition), [created]);
  t.same(decideCreateBroadcast(given([created]), definition), [], 'a repeat');
  t.same(decideStartBroadcast(given([created]), { recipients: 3, now: NOW }), [started]);
  t.same(decideStartBroadcast(given([created, started]), { recipients: 3, now: NOW }), [], 'started once');
  t.same(decideStartBroadcast(given([created, cancelled]), { recipients: 3, now: NOW }), [], 'a cancel won');
  t.same(decideCompleteBroadcast(given([created]), { accepted: 3, refused: 0, now: NOW }), [], 'not started');
  const complete = decideCompleteBroadcast(given([created, started]), { accepted: 2, refused: 1, now: NOW });
  t.match(complete, [{ type: 'BroadcastCompleted', data: { accepted: 2, refused: 1 } }]);
  t.same(decideCompleteBroadcast(given([created, started, ...complete]), { accepted: 2, refused: 1, now: NOW }), []);
});

t.test('cancel only before the start', async (t) => {
  t.same(decideCancelBroadcast(given([created]), { now: NOW }), [cancelled]);
  t.same(decideCancelBroadcast(given([created, cancelled]), { now: NOW }), [], 'again: nothing');
  t.match(
    refusal(() => decideCancelBroadcast(given([created, started]), { now: NOW })),
    {
      code: 'email_not_cancellable',
    },
  );
  t.match(
    refusal(() => decideCancelBroadcast(given([]), { now: NOW })),
    { code: 'resource_not_found', param: 'id' },
  );
});

t.test('template uses: reserved uses refuse the close; a closed template refuses reservations', async (t) => {
  const uses = (events: TemplateUseEvent[]) =>
    events.reduce(templateUsesAggregate.evolve, templateUsesAggregate.initialState);
  const templateId = definition.templateId;
  const reserve = (broadcastId: string) => ({ templateId, partition: 'ws', broadcastId, now: NOW });
  const a = decideReserveTemplateUse(uses([]), reserve('bc_a'));
  t.match(a, [{ type: 'TemplateUseReserved', data: { broadcastId: 'bc_a' } }]);
  t.same(decideReserveTemplateUse(uses(a), reserve('bc_a')), [], 'a repeat');
  t.match(
    refusal(() => decideCloseTemplateUses(uses(a), { templateId, stale: [], now: NOW })),
    {
      code: 'template_in_use',
    },
  );
  const closed = decideCloseTemplateUses(uses(a), { templateId, stale: ['bc_a'], now: NOW });
  t.same(
    closed.map((e) => e.type),
    ['TemplateUseReleased', 'TemplateUsesClosed'],
    'a stale use is released in the same append',
  );
  t.match(
    refusal(() => decideReserveTemplateUse(uses([...a, ...closed]), reserve('bc_b'))),
    {
      code: 'template_not_found',
      param: 'templateId',
    },
  );
  const released = decideReleaseTemplateUse(uses(a), { templateId, broadcastId: 'bc_a', now: NOW });
  t.same(decideCloseTemplateUses(uses([...a, ...released]), { templateId, stale: [], now: NOW }).length, 1);
  t.same(decideReleaseTemplateUse(uses([...a, ...released]), { templateId, broadcastId: 'bc_a', now: NOW }), []);
});
