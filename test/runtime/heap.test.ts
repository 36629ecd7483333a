import { fork } from 'node:child_process';
import t from 'tap';
import { readConfig } from '../../infra/config.ts';
import { entryArgs } from '../support/paths.ts';

const peakHeap = (percent: number) =>
  new Promise<number>((resolve, reject) => {
    const args = entryArgs('test/support/heap-churn');
    const child = fork(args.at(-1)!, [String(percent)], { execArgv: args.slice(0, -1) });
    child.on('message', (m: { peak: number }) => resolve(m.peak));
    child.on('error', reject);
    child.on('exit', (code) => code !== 0 && reject(new Error(`heap-churn exited ${code}`)));
  });

t.test('a bounded heap stays near its live set where V8 alone lets it grow', async (t) => {
  const own = await peakHeap(0);
  const bounded = await peakHeap(50);
  t.ok(bounded < own * 0.75, `bounded ${Math.round(bounded / 1e6)} MB against V8's own ${Math.round(own / 1e6)} MB`);
});

t.test('HEAP_GROWING_PERCENT: 50 unless set, 0 for V8 own, refused when not a percentage', async (t) => {
  t.equal(readConfig({}).heapGrowingPercent, 50);
  t.equal(readConfig({ HEAP_GROWING_PERCENT: '0' }).heapGrowingPercent, 0);
  t.equal(readConfig({ HEAP_GROWING_PERCENT: '120' }).heapGrowingPercent, 120);
  for (const bad of ['-1', '1.5', 'half', '1001'])
    t.throws(() => readConfig({ HEAP_GROWING_PERCENT: bad }), /HEAP_GROWING_PERCENT must be/, bad);
});
