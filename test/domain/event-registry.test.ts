import t, { type Test } from 'tap';
import { z, ZodError } from 'zod';
import { EventRegistry, defineEvent } from '../../domain/shared/events.ts';

/**
 * A test-local event with three versions of its shape:
 *   v1 { title }  →  v2 { name } (renamed)  →  v3 { name, tags } (added, empty for old events)
 */
const upcasted: string[] = [];
const ThingNamed = defineEvent('ThingNamed', z.object({ name: z.string().min(1), tags: z.array(z.string()) }), {
  version: 3,
  upcasters: {
    1: ({ title, ...rest }) => {
      upcasted.push('v1→v2');
      return { ...rest, name: title };
    },
    2: (data) => {
      upcasted.push('v2→v3');
      return { ...data, tags: [] };
    },
  },
});
const ThingArchived = defineEvent('ThingArchived', z.object({ reason: z.string() }));
const registry = new EventRegistry([ThingNamed, ThingArchived]);

t.beforeEach(() => {
  upcasted.length = 0;
});

t.test('encode stamps the current version on a valid payload', async (t) => {
  t.strictSame(registry.encode({ type: 'ThingNamed', data: { name: 'a', tags: ['x'] } }), {
    type: 'ThingNamed',
    version: 3,
    data: { name: 'a', tags: ['x'] },
  });
  t.strictSame(
    registry.encode({ type: 'ThingArchived', data: { reason: 'done' } }).version,
    1,
    'version 1 when not given',
  );
});

// A mismatch is the service's fault, not the caller's: a plain Error, never the ZodError the API answers as 422.
const fault = (t: Test, f: () => unknown, pattern: RegExp, message = "a fault, not the caller's error") => {
  try {
    f();
    t.fail(message);
  } catch (error) {
    t.notOk(error instanceof ZodError, 'not a ZodError');
    t.match((error as Error).message, pattern, message);
    t.ok((error as Error).cause instanceof ZodError, 'the schema problem is its cause');
  }
};

t.test('encode refuses a payload that does not match the schema', async (t) => {
  fault(
    t,
    () => registry.encode({ type: 'ThingNamed', data: { name: '', tags: [] } }),
    /ThingNamed to be stored does not match/,
    'a failed refinement',
  );
  fault(t, () => registry.encode({ type: 'ThingNamed', data: { name: 'a' } }), /does not match/, 'a missing field');
  fault(
    t,
    () => registry.encode({ type: 'ThingNamed', data: { title: 'old shape', tags: [] } }),
    /does not match/,
    'an old shape',
  );
  t.throws(() => registry.encode({ type: 'ThingDeleted', data: {} }), /unknown event type ThingDeleted/);
});

t.test('decode upcasts v1 through every step, in order, to the current shape', async (t) => {
  t.strictSame(registry.decode('ThingNamed', 1, { title: 'old' }), {
    type: 'ThingNamed',
    data: { name: 'old', tags: [] },
  });
  t.strictSame(upcasted, ['v1→v2', 'v2→v3']);
});

t.test('decode starts the chain at the stored version', async (t) => {
  t.strictSame(registry.decode('ThingNamed', 2, { name: 'mid' }).data, { name: 'mid', tags: [] });
  t.strictSame(upcasted, ['v2→v3']);
  t.strictSame(registry.decode('ThingNamed', 3, { name: 'new', tags: ['t'] }).data, { name: 'new', tags: ['t'] });
  t.strictSame(upcasted, ['v2→v3'], 'the current version needs no upcaster');
});

t.test('decode validates the upcast result against the current schema', async (t) => {
  fault(t, () => registry.decode('ThingNamed', 1, { title: '' }), /ThingNamed stored as v1 does not match/);
  fault(t, () => registry.decode('ThingNamed', 3, { name: 'no tags' }), /ThingNamed stored as v3 does not match/);
});

t.test('decode refuses a version newer than the code and an unknown type', async (t) => {
  t.throws(
    () => registry.decode('ThingNamed', 4, { name: 'future', tags: [] }),
    /ThingNamed v4 is newer than this code \(v3\)/,
  );
  t.throws(() => registry.decode('ThingDeleted', 1, {}), /unknown event type ThingDeleted/);
  t.strictSame(upcasted, []);
});

t.test('a gap in the upcaster chain is reported, not skipped', async (t) => {
  const gappy = new EventRegistry([
    defineEvent('Gappy', z.object({ c: z.number() }), { version: 3, upcasters: { 2: (d) => ({ c: d.b }) } }),
  ]);
  t.throws(() => gappy.decode('Gappy', 1, { a: 1 }), /Gappy has no upcaster from v1/);
  t.strictSame(gappy.decode('Gappy', 2, { b: 7 }).data, { c: 7 });
});

t.test('a type cannot be defined twice', async (t) => {
  t.throws(
    () => new EventRegistry([ThingArchived, defineEvent('ThingArchived', z.object({}))]),
    /ThingArchived defined twice/,
  );
});
