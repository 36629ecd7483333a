/**
 * Turns for one key come one at a time, in the order they were asked for; different keys go at
 * once. Commands of one process take turns on a stream (commands/execute.ts), so they never race
 * each other for its revision: N concurrent writes of one stream cost N appends, not up to N²
 * reads and appends lost to each other.
 */
export class Turns {
  private readonly last = new Map<string, Promise<void>>();

  /** Resolves when the turn comes, with the function that ends it (calling it again does nothing). */
  async take(key: string): Promise<() => void> {
    const previous = this.last.get(key);
    let end!: () => void;
    const mine = new Promise<void>((resolve) => {
      end = () => {
        resolve();
        if (this.last.get(key) === mine) this.last.delete(key);
      };
    });
    this.last.set(key, mine);
    await previous;
    return end;
  }
}
