import v8 from 'node:v8';

/** How far V8 may grow the heap past what survived its last full collection, in percent. */
export const DEFAULT_HEAP_GROWING_PERCENT = 50;

/**
 * Fixes V8's heap growth at `percent` over the live set (0 leaves V8's own policy). Where full
 * collections are cheap, V8 lets the old generation grow to up to four times what survived the
 * last one: a projector catching up, or an import reading ahead, promotes short-lived batches, and
 * the heap reached 250 MB around a live set of 60 (docs/benchmarks.md, 2026-11-27 20:58). A fixed
 * growth costs more, smaller full collections, incremental as before; neither the import nor the
 * export moved in throughput. The flag is read at every collection, so setting it at start works.
 */
export function boundHeapGrowth(percent: number = DEFAULT_HEAP_GROWING_PERCENT): void {
  if (percent > 0) v8.setFlagsFromString(`--heap-growing-percent=${percent}`);
}
