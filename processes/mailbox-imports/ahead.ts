/**
 * `items` in order, each with what `prepare` made of it, preparing up to `limits.items` of them
 * (and `limits.bytes` of their `weight`, always at least one) ahead of the consumer. An import
 * files its messages one after another (threading reads what the one before filed), but storing
 * and parsing a message needs nothing of the others: done ahead, it overlaps the filing of the
 * messages before it instead of adding to it (docs/benchmarks.md).
 *
 * A consumer that stops early (a batch ends, a cancel) leaves the rest unprepared: the source is
 * closed, and what is under way is waited for, so nothing of the step runs after it.
 */
export async function* prepareAhead<T, P>(
  items: AsyncIterable<T>,
  prepare: (item: T) => Promise<P>,
  weight: (item: T) => number,
  limits: { items: number; bytes: number },
): AsyncGenerator<{ item: T; prepared: P }> {
  const source = items[Symbol.asyncIterator]();
  const queue: { item: T; prepared: Promise<P>; weight: number }[] = [];
  let bytes = 0;
  let ended = false;
  try {
    for (;;) {
      while (!ended && (queue.length === 0 || (queue.length < limits.items && bytes < limits.bytes))) {
        const next = await source.next();
        if (next.done) {
          ended = true;
          break;
        }
        const prepared = prepare(next.value);
        // Awaited in its turn below; until then a rejection must not count as unhandled.
        prepared.catch(() => {});
        const w = weight(next.value);
        queue.push({ item: next.value, prepared, weight: w });
        bytes += w;
      }
      const head = queue.shift();
      if (head === undefined) return;
      bytes -= head.weight;
      yield { item: head.item, prepared: await head.prepared };
    }
  } finally {
    await Promise.allSettled(queue.map((q) => q.prepared));
    if (!ended) await source.return?.(undefined);
  }
}
