import t from 'tap';
import { newId, newIds } from '../../commands/ids.ts';
import { digestId, ID_KINDS, idPatterns, type RandomIdKind } from '../../domain/shared/ids.ts';
import { deliveryIdOf } from '../../domain/webhooks/catalogue.ts';
import { runIdOf } from '../../processes/automations/enrol.ts';

t.test('every kind commands draw matches its pattern', async (t) => {
  for (const kind of Object.keys(newId) as RandomIdKind[]) {
    const id = newId[kind]();
    t.match(id, idPatterns[kind], kind);
    t.ok(id.startsWith(ID_KINDS[kind].prefix), `${kind} carries its prefix`);
  }
  const batch = newIds('contactEvent', 100);
  t.equal(new Set(batch).size, 100, 'a batch from one draw holds no repeats');
  t.ok(batch.every((id) => idPatterns.contactEvent.test(id)));
  t.notOk(idPatterns.template.test(`tplv_${'0'.repeat(24)}`), 'a version id is no template id');
  t.notOk(idPatterns.webhookEndpoint.test(`whe_${'0'.repeat(23)}`), 'one digit short');
});

t.test('ids drawn one by one, past many refills of the pool of randomness, never repeat', async (t) => {
  const ids = new Set<string>();
  // 12 bytes an id, 4 KiB a refill: 20,000 ids are about 60 refills, and mixed sizes of draw
  // (base36 keys take 32 bytes) leave the pool's end at every offset.
  for (let i = 0; i < 20_000; i++) ids.add(i % 7 === 0 ? newId.apiKey() : newId.request());
  t.equal(ids.size, 20_000);
  const bodies = [...ids].map((id) => id.slice(id.lastIndexOf('_') + 1));
  t.equal(new Set(bodies).size, 20_000, 'no body repeats under another prefix either');
});

t.test('digest ids stay what the log already holds: a replay must name the same delivery and run', async (t) => {
  t.equal(deliveryIdOf(7, 'whe_1'), 'whd_45c636886c582abb74683598');
  t.equal(runIdOf('aut_1', 'cev_1'), 'aur_630049d60c24f8e7ca25be94');
  t.equal(digestId('automationSend', 'aur_1/2/3'), 'asr_5ed0a2174600e2958f41c82f');
  t.match(deliveryIdOf(7, 'whe_1'), idPatterns.webhookDelivery);
});
