import crypto from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Test } from 'tap';
import {
  WrongExpectedRevision,
  type EventStore,
  type EventToAppend,
  type RecordedEvent,
} from '../../infra/eventstore/port.ts';

export interface ContractStore {
  store: EventStore;
  cleanup(): Promise<void>;
}

const event = (n: number, extra: Partial<EventToAppend> = {}): EventToAppend => ({
  type: 'ContractTested',
  version: 1,
  data: { n },
  ...extra,
});

/**
 * The behaviour every event store adapter owes the rest of the service. It may run against a
 * shared server: every stream name carries a per-run id, and nothing assumes an empty store.
 * A write may become visible in `$all` a little after `append` returns (PostgreSQL holds it back
 * behind older open transactions), so `$all` assertions wait for what they expect.
 */
export function eventStoreContract(t: Test, name: string, makeStore: () => Promise<ContractStore>): Promise<unknown> {
  const run = `ct${crypto.randomBytes(5).toString('hex')}`;
  const open = async (t: Test) => {
    const { store, cleanup } = await makeStore();
    t.teardown(cleanup);
    return store;
  };

  return t.test(name, async (t) => {
    t.test('append to a new stream with no_stream numbers revisions from 0 and returns a position', async (t) => {
      const store = await open(t);
      const stream = `${run}-new`;
      const first = await store.append(stream, [event(0), event(1), event(2)], 'no_stream');
      t.equal(first.revision, 2);
      t.type(first.position, 'number');
      t.ok(first.position > 0, 'a position');
      const stored = await store.readStream(stream);
      t.strictSame(
        stored.map((e) => e.revision),
        [0, 1, 2],
      );
      t.equal(stored[2]!.position, first.position, 'the position of the last event written');
      t.ok(isIncreasing(stored.map((e) => e.position)));
      const next = await store.append(stream, [event(3)], 2);
      t.equal(next.revision, 3);
      t.ok(next.position > first.position);
    });

    t.test(
      'a wrong expectation throws WrongExpectedRevision with the actual revision and writes nothing',
      async (t) => {
        const store = await open(t);
        const stream = `${run}-wrong`;
        const missing = `${run}-wrong-missing`;
        await store.append(stream, [event(0), event(1)], 'no_stream');
        await conflict(t, store.append(stream, [event(9)], 0), { streamId: stream, expected: 0, actual: 1 });
        await conflict(t, store.append(stream, [event(9)], 5), { streamId: stream, expected: 5, actual: 1 });
        await conflict(t, store.append(stream, [event(9)], 'no_stream'), {
          streamId: stream,
          expected: 'no_stream',
          actual: 1,
        });
        await conflict(t, store.append(missing, [event(9)], 'exists'), {
          streamId: missing,
          expected: 'exists',
          actual: -1,
        });
        await conflict(t, store.append(missing, [event(9)], 0), { streamId: missing, expected: 0, actual: -1 });
        t.equal((await store.readStream(stream)).length, 2);
        t.strictSame(await store.readStream(missing), []);
      },
    );

    t.test("'any' creates a stream and extends it; 'exists' extends it", async (t) => {
      const store = await open(t);
      const stream = `${run}-any`;
      t.equal((await store.append(stream, [event(0)], 'any')).revision, 0);
      t.equal((await store.append(stream, [event(1), event(2)], 'any')).revision, 2);
      t.equal((await store.append(stream, [event(3)], 'exists')).revision, 3);
      t.strictSame(
        (await store.readStream(stream)).map((e) => e.data.n),
        [0, 1, 2, 3],
      );
    });

    t.test('of concurrent appends with the same expectation exactly one wins', async (t) => {
      const store = await open(t);
      for (let round = 0; round < 5; round++) {
        const stream = `${run}-race-${round}`;
        const created = await Promise.allSettled([1, 2].map((n) => store.append(stream, [event(n)], 'no_stream')));
        t.equal(created.filter((r) => r.status === 'fulfilled').length, 1, `round ${round}: one no_stream append wins`);
        const extended = await Promise.allSettled([1, 2].map((n) => store.append(stream, [event(n)], 0)));
        t.equal(
          extended.filter((r) => r.status === 'fulfilled').length,
          1,
          `round ${round}: one revision-0 append wins`,
        );
        for (const lost of [...created, ...extended].filter((r) => r.status === 'rejected')) {
          t.type(lost.reason, WrongExpectedRevision);
        }
        t.strictSame(
          (await store.readStream(stream)).map((e) => e.revision),
          [0, 1],
        );
      }
    });

    t.test('appendMany appends to many streams, each on its own expectation', async (t) => {
      const store = await open(t);
      const stream = (n: number) => `${run}-many-${n}`;
      await store.append(stream(0), [event(0)], 'no_stream');
      const results = await store.appendMany([
        ...Array.from({ length: 50 }, (_, i) => ({
          streamId: stream(i + 1),
          events: [event(i + 1)],
          expected: 'no_stream' as const,
        })),
        // Refused: the stream exists. The others are written all the same.
        { streamId: stream(0), events: [event(100)], expected: 'no_stream' },
        { streamId: stream(0), events: [event(101), event(102)], expected: 0 },
        // The same new stream twice: the first wins, the second finds it made.
        { streamId: stream(60), events: [event(60)], expected: 'no_stream' },
        { streamId: stream(60), events: [event(61)], expected: 'no_stream' },
      ]);
      t.equal(results.length, 54, 'one result an append, in their order');
      for (const [i, r] of results.slice(0, 50).entries()) {
        if (r.status !== 'fulfilled') {
          t.fail(`append ${i} was refused: ${r.reason}`);
          continue;
        }
        t.equal(r.value.revision, 0);
        t.strictSame(
          (await store.readStream(stream(i + 1))).map((e) => [e.revision, e.data.n, e.position]),
          [[0, i + 1, r.value.position]],
        );
      }
      const refused = (r: PromiseSettledResult<unknown>) => (r.status === 'rejected' ? r.reason : null);
      t.match(refused(results[50]!), { streamId: stream(0), expected: 'no_stream', actual: 0 });
      t.type(refused(results[50]!), WrongExpectedRevision);
      t.match(results[51], { status: 'fulfilled', value: { revision: 2 } });
      t.match(results[52], { status: 'fulfilled', value: { revision: 0 } });
      t.type(refused(results[53]!), WrongExpectedRevision);
      t.strictSame(
        (await store.readStream(stream(0))).map((e) => e.data.n),
        [0, 101, 102],
      );
      t.strictSame(
        (await store.readStream(stream(60))).map((e) => e.data.n),
        [60],
      );
      t.strictSame(await store.appendMany([]), [], 'nothing to append answers nothing');
    });

    t.test('readStream returns a stream in revision order from a revision', async (t) => {
      const store = await open(t);
      const stream = `${run}-read`;
      await store.append(stream, [event(0), event(1)], 'no_stream');
      await store.append(stream, [event(2), event(3), event(4)], 1);
      const all = await store.readStream(stream);
      t.strictSame(
        all.map((e) => e.revision),
        [0, 1, 2, 3, 4],
      );
      t.strictSame(
        all.map((e) => e.data.n),
        [0, 1, 2, 3, 4],
      );
      t.ok(all.every((e) => e.streamId === stream && e.type === 'ContractTested' && e.recordedAt instanceof Date));
      t.strictSame(
        (await store.readStream(stream, 3)).map((e) => e.revision),
        [3, 4],
      );
      t.strictSame(await store.readStream(stream, 5), []);
      t.strictSame(await store.readStream(`${run}-never-written`), []);
    });

    t.test('readAll: position order, after, limit and a literal stream prefix', async (t) => {
      const store = await open(t);
      const prefix = `${run}-all-`;
      const before = await store.headPosition();
      await store.append(`${prefix}a`, [event(0), event(1)], 'no_stream');
      await store.append(`${prefix}b`, [event(2)], 'no_stream');
      await store.append(`${prefix}a`, [event(3)], 1);
      const ours = await visible(store, { after: before, streamPrefix: prefix }, 4);
      t.strictSame(
        ours.map((e) => e.data.n),
        [0, 1, 2, 3],
        'append order',
      );
      t.strictSame(
        ours.map((e) => e.streamId),
        [`${prefix}a`, `${prefix}a`, `${prefix}b`, `${prefix}a`],
      );
      t.ok(isIncreasing(ours.map((e) => e.position)), 'strictly increasing positions');

      t.strictSame(await store.readAll({ streamPrefix: prefix }), ours, 'after defaults to the start');
      t.strictSame(
        await store.readAll({ after: ours[1]!.position, streamPrefix: prefix }),
        ours.slice(2),
        'after is exclusive',
      );
      t.strictSame(await store.readAll({ after: before, limit: 3, streamPrefix: prefix }), ours.slice(0, 3), 'limit');
      const unfiltered = await store.readAll({ after: before, limit: 100_000 });
      t.ok(isIncreasing(unfiltered.map((e) => e.position)), 'unfiltered reads are in position order too');
      t.strictSame(
        unfiltered.filter((e) => e.streamId.startsWith(prefix)),
        ours,
      );

      const literal = `${run}-lit_%-`;
      const before2 = await store.headPosition();
      await store.append(`${literal}1`, [event(10)], 'no_stream');
      // Each decoy matches the prefix only if `_` or `%` acted as a wildcard.
      await store.append(`${run}-litX%-1`, [event(11)], 'no_stream');
      await store.append(`${run}-lit_ZZ-1`, [event(12)], 'no_stream');
      await visible(store, { after: before2, streamPrefix: `${run}-lit` }, 3);
      t.strictSame(
        (await store.readAll({ after: before2, streamPrefix: literal })).map((e) => e.data.n),
        [10],
      );
    });

    t.test('data, version and metadata round-trip', async (t) => {
      const store = await open(t);
      const stream = `${run}-meta`;
      const before = await store.headPosition();
      const metadata = { correlationId: 'c-1', causedBy: { kind: 'apiKey', id: 'k_1' }, tags: ['a', 'b'] };
      const data = { n: 1, nested: { list: [1, 'two', null], flag: true }, text: 'ünïcode ✓' };
      await store.append(stream, [{ type: 'ContractVersioned', version: 3, data, metadata }, event(2)], 'no_stream');
      const [withMeta, without] = await store.readStream(stream);
      t.strictSame(withMeta!.metadata, metadata);
      t.strictSame(withMeta!.data, data);
      t.equal(withMeta!.version, 3);
      t.equal(withMeta!.type, 'ContractVersioned');
      t.strictSame(without!.metadata, {});
      t.equal(without!.version, 1);
      const [fromAll] = await visible(store, { after: before, streamPrefix: stream }, 2);
      t.strictSame(fromAll, withMeta, 'readAll returns the same event as readStream');
    });

    t.test('headPosition reaches the newest append and never goes back', async (t) => {
      const store = await open(t);
      const first = await store.append(`${run}-head`, [event(0)], 'no_stream');
      const h1 = await eventually(
        () => store.headPosition(),
        (h) => h >= first.position,
      );
      const second = await store.append(`${run}-head`, [event(1)], 0);
      const h2 = await eventually(
        () => store.headPosition(),
        (h) => h >= second.position,
      );
      t.ok(h2 >= h1 && h2 > first.position);
    });

    t.test('subscribeToAll delivers later appends in position order, one batch at a time, until closed', async (t) => {
      const store = await open(t);
      const prefix = `${run}-live-`;
      const seen = collector(prefix);
      const subscription = store.subscribeToAll({ after: await store.headPosition(), onEvents: seen.onEvents });
      await store.append(`${prefix}a`, [event(0), event(1)], 'no_stream');
      await store.append(`${prefix}b`, [event(2)], 'no_stream');
      await store.append(`${prefix}a`, [event(3)], 1);
      await eventually(
        async () => seen.ours.length,
        (n) => n >= 4,
      );
      await subscription.close();
      t.strictSame(
        seen.ours.map((e) => e.data.n),
        [0, 1, 2, 3],
      );
      t.ok(
        isIncreasing(seen.all.map((e) => e.position)),
        'every delivered event in strictly increasing position order',
      );
      t.equal(seen.maxConcurrent, 1, 'the next batch waits for the previous one');
      t.notOk(
        seen.all.some((e) => e.streamId.startsWith('$')),
        'no system events',
      );

      await store.append(`${prefix}b`, [event(4)], 0);
      await sleep(300);
      t.equal(seen.ours.length, 4, 'nothing arrives after close');
    });

    t.test('subscribeToAll from a position starts right after it', async (t) => {
      const store = await open(t);
      const prefix = `${run}-from-`;
      const before = await store.headPosition();
      await store.append(`${prefix}a`, [event(0), event(1), event(2), event(3)], 'no_stream');
      const written = await visible(store, { after: before, streamPrefix: prefix }, 4);
      const seen = collector(prefix);
      const subscription = store.subscribeToAll({ after: written[1]!.position, batchSize: 2, onEvents: seen.onEvents });
      await eventually(
        async () => seen.ours.length,
        (n) => n >= 2,
      );
      await store.append(`${prefix}a`, [event(4)], 3);
      await eventually(
        async () => seen.ours.length,
        (n) => n >= 3,
      );
      await subscription.close();
      t.strictSame(
        seen.ours.map((e) => e.data.n),
        [2, 3, 4],
      );
      t.ok(isIncreasing(seen.all.map((e) => e.position)));
      t.ok(
        seen.batchSizes.every((n) => n <= 2),
        'batches respect batchSize',
      );
    });

    t.test('subscribeToAll with types hands over only those, and says how far it read past the rest', async (t) => {
      const store = await open(t);
      const prefix = `${run}-types-`;
      const after = await store.headPosition();
      const kinds = ['Kept', 'Skipped', 'Skipped', 'Kept', 'Skipped', 'Skipped'];
      await store.append(
        `${prefix}a`,
        kinds.map((type, n) => event(n, { type: `ContractTested${type}` })),
        'no_stream',
      );
      const written = await visible(store, { after, streamPrefix: prefix }, kinds.length);
      const seen: RecordedEvent[] = [];
      const reached: number[] = [];
      const subscription = store.subscribeToAll({
        after,
        batchSize: 2,
        types: ['ContractTestedKept'],
        onEvents: async (events, upTo) => {
          seen.push(...events.filter((e) => e.streamId.startsWith(prefix)));
          reached.push(upTo);
          t.ok(
            events.every((e) => e.position <= upTo),
            'no event beyond how far the log was read',
          );
        },
      });
      await eventually(
        async () => reached.at(-1) ?? after,
        (upTo) => upTo >= written.at(-1)!.position,
      );
      await subscription.close();
      t.strictSame(
        seen.map((e) => e.data.n),
        [0, 3],
        'only the kept type, in order',
      );
      t.ok(isIncreasing(reached), 'how far it read only moves on');
    });
  });
}

async function conflict(t: Test, append: Promise<unknown>, wanted: Partial<WrongExpectedRevision>): Promise<void> {
  const error = await append.then(
    () => null,
    (e: unknown) => e,
  );
  t.type(error, WrongExpectedRevision, `${String(wanted.expected)} on ${wanted.streamId}`);
  t.match(error, wanted);
}

/** Collects what a subscription delivers, keeping this test's events apart from a shared server's. */
function collector(prefix: string) {
  let active = 0;
  const state = {
    all: [] as RecordedEvent[],
    ours: [] as RecordedEvent[],
    batchSizes: [] as number[],
    maxConcurrent: 0,
    onEvents: async (events: RecordedEvent[]) => {
      active++;
      state.maxConcurrent = Math.max(state.maxConcurrent, active);
      // A slow consumer gives a store that does not wait for it the chance to overlap batches.
      await sleep(10);
      state.batchSizes.push(events.length);
      state.all.push(...events);
      state.ours.push(...events.filter((e) => e.streamId.startsWith(prefix)));
      active--;
    },
  };
  return state;
}

async function visible(
  store: EventStore,
  options: { after: number; streamPrefix: string },
  count: number,
): Promise<RecordedEvent[]> {
  return eventually(
    () => store.readAll(options),
    (events) => events.length >= count,
  );
}

async function eventually<T>(probe: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (done(value)) return value;
    if (Date.now() > deadline)
      throw new Error(`condition not met within ${timeoutMs} ms; last value ${JSON.stringify(value)}`);
    await sleep(20);
  }
}

function isIncreasing(values: number[]): boolean {
  return values.every((v, i) => i === 0 || v > values[i - 1]!);
}
