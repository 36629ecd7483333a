import t from 'tap';
import { refusal } from '../support/refusal.ts';
import { decideCreateLabel, decideDeleteLabel, decideUpdateLabel, LABELS_MAX } from '../../domain/labels/decide.ts';
import type { LabelEvent } from '../../domain/labels/events.ts';
import { labelsAggregate, type LabelsState } from '../../domain/labels/state.ts';
import { decideChangeThreadLabels } from '../../domain/threads/decide.ts';
import type { ThreadEvent } from '../../domain/threads/events.ts';
import { threadAggregate, type ThreadState } from '../../domain/threads/state.ts';

const NOW = '2026-01-01T00:00:00.000Z';
const after = (state: LabelsState, events: LabelEvent[]) => events.reduce(labelsAggregate.evolve, state);
const create = (state: LabelsState, labelId: string, name: string) =>
  decideCreateLabel(state, { labelId, owner: 'addr_1', address: 'a@example.com', name, color: null, now: NOW });

t.test('create: names unique per mailbox ignoring case, system names taken, a limit', async (t) => {
  const made = create(labelsAggregate.initialState, 'lbl_1', 'Work');
  t.match(made, [{ type: 'LabelCreated', data: { labelId: 'lbl_1', name: 'Work', owner: 'addr_1' } }]);
  const s = after(labelsAggregate.initialState, made);
  t.same(create(s, 'lbl_1', 'Work'), [], 'the same create again decides nothing');
  for (const name of ['work', 'WORK', 'Inbox', 'sent'])
    t.match(
      refusal(() => create(s, 'lbl_2', name)),
      { code: 'label_name_taken', param: 'name' },
    );
  let full = labelsAggregate.initialState;
  for (let i = 0; i < LABELS_MAX; i++) full = after(full, create(full, `lbl_${i}`, `L${i}`));
  t.equal(full.labels.size, LABELS_MAX);
  t.match(
    refusal(() => create(full, 'lbl_x', 'One more')),
    { code: 'label_limit_reached' },
  );
  const freed = after(full, decideDeleteLabel(full, { labelId: 'lbl_0', owner: 'addr_1', now: NOW }));
  t.match(create(freed, 'lbl_x', 'L0'), [{ type: 'LabelCreated' }], 'a deleted label frees its name and place');
});

t.test('update and delete', async (t) => {
  const s = after(labelsAggregate.initialState, [...create(labelsAggregate.initialState, 'lbl_1', 'Work')]);
  const two = after(s, create(s, 'lbl_2', 'Home'));
  t.same(decideUpdateLabel(two, { labelId: 'lbl_1', name: 'Work', now: NOW }), [], 'nothing changed');
  t.match(decideUpdateLabel(two, { labelId: 'lbl_1', name: 'WORK', now: NOW }), [
    { type: 'LabelUpdated', data: { name: 'WORK', color: null } },
  ]);
  t.match(decideUpdateLabel(two, { labelId: 'lbl_1', color: '#ff0000', now: NOW }), [
    { type: 'LabelUpdated', data: { name: 'Work', color: '#ff0000' } },
  ]);
  t.match(
    refusal(() => decideUpdateLabel(two, { labelId: 'lbl_1', name: 'home', now: NOW })),
    {
      code: 'label_name_taken',
    },
  );
  t.match(
    refusal(() => decideUpdateLabel(two, { labelId: 'lbl_9', name: 'x', now: NOW })),
    {
      code: 'resource_not_found',
    },
  );
  const gone = after(two, decideDeleteLabel(two, { labelId: 'lbl_1', owner: 'addr_1', now: NOW }));
  t.same([...gone.labels.keys()], ['lbl_2']);
  t.match(
    refusal(() => decideDeleteLabel(gone, { labelId: 'lbl_1', owner: 'addr_1', now: NOW })),
    {
      code: 'resource_not_found',
    },
  );
});

t.test('a thread takes only live labels of its mailbox', async (t) => {
  const T = 'thr_1';
  const thread: ThreadState = { ...threadAggregate.initialState, exists: true, label: 'inbox' };
  const known = new Set(['lbl_1', 'lbl_2']);
  const change = (state: ThreadState, add: string[], remove: string[] = []) =>
    decideChangeThreadLabels(state, { threadId: T, add, remove, known, now: NOW });
  const added = change(thread, ['lbl_1', 'lbl_1', 'lbl_2']);
  t.same(added, [
    { type: 'ThreadLabelsChanged', data: { threadId: T, added: ['lbl_1', 'lbl_2'], removed: [], at: NOW } },
  ]);
  const s = (added as ThreadEvent[]).reduce(threadAggregate.evolve, thread);
  t.same([...s.labels], ['lbl_1', 'lbl_2']);
  t.same(change(s, ['lbl_1']), [], 'already on');
  t.same(change(thread, [], ['lbl_1']), [], 'not on');
  t.match(change(s, [], ['lbl_2']), [{ data: { added: [], removed: ['lbl_2'] } }]);
  t.match(
    refusal(() => change(s, ['lbl_9'])),
    { code: 'label_not_found', param: 'addLabels.0' },
  );
  t.match(
    refusal(() => change(s, [], ['lbl_1', 'lbl_9'])),
    { code: 'label_not_found', param: 'removeLabels.1' },
  );
  t.match(
    refusal(() => change(s, ['trash'])),
    { code: 'label_not_directly_settable', param: 'addLabels.0' },
  );
  t.match(
    refusal(() => change(s, ['lbl_1'], ['lbl_1'])),
    { code: 'invalid_parameter', param: 'removeLabels.0' },
  );
  t.match(
    refusal(() => change(threadAggregate.initialState, ['lbl_1'])),
    { code: 'resource_not_found' },
  );
});
