/**
 * `fn` over `items`, at most `width` at once, results in the items' order. After a failure no
 * further item starts, and the first error is thrown once those under way have ended, so no work
 * of the call outlives it.
 */
export async function inTurns<T, R>(
  items: readonly T[],
  width: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  const thrown: unknown[] = [];
  let next = 0;
  const lane = async () => {
    while (next < items.length && thrown.length === 0) {
      const i = next++;
      try {
        results[i] = await fn(items[i]!, i);
      } catch (error) {
        thrown.push(error);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, lane));
  if (thrown.length > 0) throw thrown[0];
  return results;
}
