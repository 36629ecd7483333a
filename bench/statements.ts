import { AsyncResource } from 'node:async_hooks';
import pg from 'pg';

/** A statement as the counting scripts show it: its text, white space folded, cut short. */
const statementText = (q: unknown): string => {
  const text = typeof q === 'string' ? q : ((q as { text?: string })?.text ?? String(q));
  return text.replace(/\s+/g, ' ').trim().slice(0, 160);
};

/**
 * Shows `seen` every statement `pg.Client#query` is given, before it goes out; what `seen` answers,
 * if anything, is called once the statement is answered (its time in flight over). The scripts
 * that count what a path costs in statements (email-statements.ts, provider-import-statements.ts)
 * patch pg this one way.
 */
export function watchStatements(
  seen: (text: string, args: unknown[], client: pg.Client) => (() => void) | undefined,
): void {
  const query = pg.Client.prototype.query as (...args: unknown[]) => unknown;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const end = seen(statementText(args[0]), args, this);
    if (end === undefined) return query.apply(this, args);
    const callback = args.at(-1);
    if (typeof callback === 'function') {
      args[args.length - 1] = (...r: unknown[]) => {
        end();
        return callback(...r);
      };
      return query.apply(this, args);
    }
    const result = query.apply(this, args);
    if (result instanceof Promise) result.then(end, end);
    else end();
    return result;
  } as typeof pg.Client.prototype.query;
}

/**
 * pg-pool hands a client to a waiting callback from whatever released it: bound to the caller,
 * the statements of `pool.query` stay in the async chain that asked for them (for the scripts
 * that tell a path's statements by their AsyncLocalStorage).
 */
export function bindPoolCallbacks(): void {
  const connect = pg.Pool.prototype.connect as (...args: unknown[]) => unknown;
  pg.Pool.prototype.connect = function (this: pg.Pool, ...args: unknown[]) {
    const callback = args[0];
    if (typeof callback === 'function') args[0] = AsyncResource.bind(callback as (...a: unknown[]) => unknown);
    return connect.apply(this, args);
  } as typeof pg.Pool.prototype.connect;
}

/**
 * Starts a statement's time in flight in `spans` (what `roundTrips` reads); the answer, called when
 * the statement is answered, ends it: what `watchStatements`' callback hands back.
 */
export function timeInFlight(spans: [number, number][]): () => void {
  const span: [number, number] = [performance.now(), Number.POSITIVE_INFINITY];
  spans.push(span);
  return () => {
    span[1] = performance.now();
  };
}

/** Statements whose times in flight overlap went out together: one round trip. */
export function roundTrips(spans: [number, number][]): number {
  const sorted = [...spans].sort((a, b) => a[0] - b[0]);
  let trips = 0;
  let until = Number.NEGATIVE_INFINITY;
  for (const [start, end] of sorted) {
    if (start > until) trips++;
    until = Math.max(until, end);
  }
  return trips;
}
