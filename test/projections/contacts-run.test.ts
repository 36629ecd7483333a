import t from 'tap';
import { contactsProjector } from '../../projections/contacts/projector.ts';
import type { ProjectedEvent } from '../../projections/projector.ts';
import { startTestApp } from '../support/app.ts';
import { projectorSchemas } from '../support/projector-schemas.ts';

t.test('a run of ContactCreated applied at once does what applying them one at a time does', async (t) => {
  const h = await startTestApp(t);
  const { pool } = h.system.database;
  const p = contactsProjector;
  let position = 0;
  const at = (n: number) => new Date(Date.UTC(2025, 0, 1, n % 3, n, 0)).toISOString();
  const envelope = (workspaceId: string, stream: string) => ({
    streamId: `ws-${workspaceId}.${stream}`,
    revision: 0,
    position: ++position,
    recordedAt: new Date(),
    metadata: { workspaceId },
  });
  const audience = (workspaceId: string, audienceId: string, builtin: 'default' | null): ProjectedEvent => ({
    type: 'AudienceCreated',
    data: { audienceId, name: audienceId, description: null, showOnPreferences: false, builtin, createdAt: at(0) },
    ...envelope(workspaceId, 'audiences'),
  });
  const contact = (workspaceId: string, n: number, audienceIds: string[], contactId = `con_${n}`): ProjectedEvent => ({
    type: 'ContactCreated',
    data: {
      contactId,
      email: `person${n}@run.test`,
      name: n % 2 === 0 ? `Person ${n}` : null,
      notes: null,
      attributes: n % 3 === 0 ? { plan: 'pro', n: String(n) } : {},
      source: 'manual',
      audienceIds,
      createdAt: at(n),
    },
    ...envelope(workspaceId, `contact-person${n}@run.test`),
  });
  const setup = [
    audience('w1', 'aud_w1_default', 'default'),
    audience('w1', 'aud_w1_a', null),
    audience('w1', 'aud_w1_b', null),
    audience('w2', 'aud_w2_default', 'default'),
  ];
  const run = [
    contact('w1', 1, ['aud_w1_default']),
    contact('w1', 2, ['aud_w1_default', 'aud_w1_a']),
    contact('w1', 3, ['aud_w1_default', 'aud_w1_b', 'aud_w1_a']),
    contact('w1', 4, ['aud_w1_default', 'aud_w1_a', 'aud_w1_a']), // one audience named twice: one membership
    contact('w1', 5, ['aud_w1_default', 'aud_gone']), // an audience that is not there: no membership
    contact('w2', 6, ['aud_w2_default', 'aud_w1_a']), // another workspace's audience: none either
    contact('w2', 7, ['aud_w2_default']),
    contact('w1', 8, ['aud_w1_default', 'aud_w1_b']),
    contact('w1', 9, []),
  ];
  const { tables, fresh, inSchema } = projectorSchemas(h.system.database, p);

  await fresh('one_by_one');
  await inSchema('one_by_one', async (trx) => {
    for (const e of [...setup, ...run]) await p.apply(trx, e);
  });
  const expected = await tables('one_by_one');
  t.equal(expected.contacts!.length, 9);
  t.equal(expected.audience_members!.length, 13, 'the memberships that could be made, each once');
  t.equal(expected.contact_audience_sets!.length, 4);

  for (const size of [1, 4, run.length]) {
    await fresh('batched');
    await inSchema('batched', (trx) => p.applyBatch(trx, setup));
    for (let i = 0; i < run.length; i += size)
      await inSchema('batched', (trx) => p.applyBatch(trx, run.slice(i, i + size)));
    t.same(await tables('batched'), expected, `runs of ${size}`);
  }
  // The runner may hand a batch over again after a crash: nothing moves the second time.
  await inSchema('batched', (trx) => p.applyBatch(trx, run));
  t.same(await tables('batched'), expected, 'a run applied again');

  // A contact twice in one run (not something the commands write) goes one by one, as before.
  const twice = [...run, contact('w1', 10, ['aud_w1_default', 'aud_w1_b'], 'con_2')];
  await fresh('one_by_one');
  await inSchema('one_by_one', async (trx) => {
    for (const e of [...setup, ...twice]) await p.apply(trx, e);
  });
  await fresh('batched');
  await inSchema('batched', (trx) => p.applyBatch(trx, [...setup, ...twice]));
  t.same(await tables('batched'), await tables('one_by_one'), 'a contact id twice in the run');
  await pool.query('DROP SCHEMA one_by_one CASCADE; DROP SCHEMA batched CASCADE');
});
