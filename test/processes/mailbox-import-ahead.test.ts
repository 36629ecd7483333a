import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { prepareAhead } from '../../processes/mailbox-imports/ahead.ts';

/** Preparation run ahead of an import's filing: order, limits, and an early stop. */
async function* numbers(n: number, pulled: number[]) {
  for (let i = 0; i < n; i++) {
    pulled.push(i);
    yield i;
  }
}

t.test('answers in order, whatever order the preparations finish in', async (t) => {
  const pulled: number[] = [];
  const seen: number[] = [];
  const slowFirst = async (i: number) => {
    await sleep(i === 0 ? 30 : 1);
    return i * 10;
  };
  for await (const { item, prepared } of prepareAhead(numbers(6, pulled), slowFirst, () => 1, { items: 3, bytes: 100 }))
    seen.push(item, prepared);
  t.same(seen, [0, 0, 1, 10, 2, 20, 3, 30, 4, 40, 5, 50]);
});

t.test('prepares at most `items` ahead, and at most `bytes` of them but always one', async (t) => {
  let running = 0;
  let most = 0;
  const prepare = async (i: number) => {
    running++;
    most = Math.max(most, running);
    await sleep(2);
    running--;
    return i;
  };
  for await (const _ of prepareAhead(numbers(20, []), prepare, () => 1, { items: 4, bytes: 100 }));
  t.equal(most, 4, 'four at once by count');
  most = 0;
  for await (const _ of prepareAhead(numbers(20, []), prepare, () => 10, { items: 8, bytes: 25 }));
  t.equal(most, 3, 'by bytes: taken while under the bound');
  most = 0;
  for await (const _ of prepareAhead(numbers(5, []), prepare, () => 1_000, { items: 8, bytes: 10 }));
  t.equal(most, 1, 'one heavier than the bound still goes, alone');
});

t.test('a consumer that stops early: the rest is not pulled, what is under way ends first', async (t) => {
  const pulled: number[] = [];
  const finished: number[] = [];
  const prepare = async (i: number) => {
    await sleep(5);
    finished.push(i);
    return i;
  };
  for await (const { item } of prepareAhead(numbers(100, pulled), prepare, () => 1, { items: 3, bytes: 100 }))
    if (item === 1) break;
  t.ok(pulled.length <= 5, `pulled ${pulled.length} of 100`);
  t.same(
    finished.sort((a, b) => a - b),
    pulled,
    'every preparation begun has ended when the loop is left',
  );
});

t.test('a preparation that fails fails the loop at its turn, not before', async (t) => {
  const seen: number[] = [];
  const prepare = async (i: number) => {
    if (i === 2) throw new Error('unreadable');
    await sleep(5);
    return i;
  };
  await t.rejects(async () => {
    for await (const { item } of prepareAhead(numbers(5, []), prepare, () => 1, { items: 4, bytes: 100 }))
      seen.push(item);
  }, /unreadable/);
  t.same(seen, [0, 1]);
});
