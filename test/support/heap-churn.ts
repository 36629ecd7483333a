/**
 * Forked by test/runtime/heap.test.ts: bounds heap growth at argv[2] percent (infra/heap.ts), then
 * promotes short-lived batches around a steady live set, as a projector catching up does, and
 * sends the peak of V8's heap size.
 */
import { boundHeapGrowth } from '../../infra/heap.ts';

boundHeapGrowth(Number(process.argv[2]));
const live: { i: number; s: string }[] = [];
for (let i = 0; i < 300_000; i++) live.push({ i, s: `live ${i}` });
const recent: object[][] = [];
let peak = 0;
for (let round = 0; round < 400; round++) {
  const batch = [];
  for (let i = 0; i < 5_000; i++) batch.push({ a: i, b: `${'y'.repeat(50)}${i}`, c: [i, i + 1] });
  recent.push(batch);
  if (recent.length > 5) recent.shift();
  await new Promise((resolve) => setImmediate(resolve));
  peak = Math.max(peak, process.memoryUsage().heapTotal);
}
process.send!({ peak, live: live.length });
