import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify, stripVTControlCharacters } from 'node:util';
import t from 'tap';
import { ROOT } from '../support/paths.ts';

/**
 * The checks `npm test` runs first (`npm run check`) fail on a breach. Each case runs the
 * repository's own script and configuration (package.json, biome.json, .dependency-cruiser.cjs,
 * tsconfig.json, copied) over a small tree of fixture files in a temporary folder: first a tree
 * that keeps every rule, which must pass, then the same tree with breaches added, which must fail
 * with exactly the breaches added.
 */

const run = promisify(execFile);

interface Outcome {
  code: number;
  /** stdout and stderr without colours: biome reports on stderr, dependency-cruiser on stdout. */
  output: string;
}

/** `npm run <script>` exactly as `npm run check` runs it. */
async function npmRun(cwd: string, script: string): Promise<Outcome> {
  try {
    const { stdout, stderr } = await run('npm', ['run', '--silent', script], {
      cwd,
      maxBuffer: 16 * 1024 * 1024,
    });
    return { code: 0, output: stripVTControlCharacters(stdout + stderr) };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    const output = stripVTControlCharacters((e.stdout ?? '') + (e.stderr ?? ''));
    return { code: typeof e.code === 'number' ? e.code : -1, output };
  }
}

/** The breaches dependency-cruiser's text report names: `error <rule>: <from> → <to>`, as `<rule> <from>`. */
const breaches = (output: string) =>
  [...output.matchAll(/^\s*error (\S+): (\S+) →/gm)].map(([, rule, from]) => `${rule} ${from}`).sort();

/** A folder holding the repository's configuration, its node_modules and the given files. */
async function project(t: { teardown(fn: () => Promise<void>): void }, files: Record<string, string>): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'wms-checks-'));
  t.teardown(() => fs.rm(dir, { recursive: true, force: true }));
  // .gitignore too: biome.json has biome read it (vcs.useIgnoreFile) and stops without it.
  for (const name of ['package.json', 'biome.json', '.dependency-cruiser.cjs', 'tsconfig.json', '.gitignore'])
    await fs.copyFile(path.join(ROOT, name), path.join(dir, name));
  await fs.symlink(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  await write(dir, files);
  return dir;
}

async function write(dir: string, files: Record<string, string>): Promise<void> {
  for (const [name, text] of Object.entries(files)) {
    await fs.mkdir(path.dirname(path.join(dir, name)), { recursive: true });
    await fs.writeFile(path.join(dir, name), text);
  }
}

/** Every import the table allows, one of each kind. */
const CLEAN: Record<string, string> = {
  'domain/shared/kernel.ts':
    "import { z } from 'zod';\nimport crypto from 'node:crypto';\nexport const id = z.string().default(() => crypto.randomUUID());\n",
  'domain/things/events.ts': "import { id } from '../shared/kernel.ts';\nexport const thingId = id;\n",
  'infra/store/port.ts':
    "import type { thingId } from '../../domain/things/events.ts';\nexport interface Store { put(id: typeof thingId): Promise<void> }\n",
  'infra/store/adapter.ts':
    "import pg from 'pg';\nimport type { Store } from './port.ts';\nexport const open = (url: string): Store & { pool: pg.Pool } => {\n  const pool = new pg.Pool({ connectionString: url });\n  return { pool, put: async () => {} };\n};\n",
  'commands/things.ts':
    "import type { Store } from '../infra/store/port.ts';\nimport { thingId } from '../domain/things/events.ts';\nexport const make = (store: Store) => store.put(thingId);\n",
  'projections/projector.ts':
    "import type { Kysely } from 'kysely';\nexport type Applier = (db: Kysely<unknown>) => Promise<void>;\n",
  'projections/things/queries.ts':
    "import { sql, type Kysely } from 'kysely';\nimport type pg from 'pg';\nimport { thingId } from '../../domain/things/events.ts';\nexport const kind = thingId;\nexport const count = (db: Kysely<unknown>, _pool: pg.Pool) => sql`SELECT 1`.execute(db);\n",
  'projections/things/projector.ts':
    "import type { Applier } from '../projector.ts';\nexport const apply: Applier = async () => {};\n",
  'processes/things.ts':
    "import type { Applier } from '../projections/projector.ts';\nimport { make } from '../commands/things.ts';\nimport { open } from '../infra/store/adapter.ts';\nexport const react: Applier = async () => make(open('postgres://'));\n",
  'api/things.ts':
    "import type { FastifyInstance } from 'fastify';\nimport type pg from 'pg';\nimport { count } from '../projections/things/queries.ts';\nimport { make } from '../commands/things.ts';\nexport const routes = (app: FastifyInstance, pool: pg.Pool) => { void app; void pool; void count; void make; };\n",
  'system.ts':
    "import { routes } from './api/things.ts';\nimport { open } from './infra/store/adapter.ts';\nimport { react } from './processes/things.ts';\nexport const parts = [routes, open, react];\n",
  'test/things.test.ts':
    "import t from 'tap';\nimport { parts } from '../system.ts';\nconst loose = (x: any) => x;\nt.ok(loose(parts));\n",
};

/** One breach per rule of .dependency-cruiser.cjs: file, its text, and the rule it breaks. */
const BREACHES: [string, string, string | null][] = [
  ['domain/things/db.ts', "import pg from 'pg';\nexport const p = pg;\n", 'domain-no-io'],
  [
    'domain/things/disk.ts',
    "import { readFileSync } from 'node:fs';\nexport const r = readFileSync;\n",
    'domain-no-io',
  ],
  [
    'domain/things/typed.ts',
    "import type { Kysely } from 'kysely';\nexport type K = Kysely<unknown>;\n",
    'domain-no-io',
  ],
  [
    'domain/things/up.ts',
    "import { make } from '../../commands/things.ts';\nexport const m = make;\n",
    'domain-is-the-core',
  ],
  [
    'domain/things/entry.ts',
    "import { parts } from '../../system.ts';\nexport const p = parts;\n",
    'layers-not-to-entry-points',
  ],
  ['domain/things/gone.ts', "import { x } from './missing.ts';\nexport const y = x;\n", 'not-to-unresolvable'],
  // A cycle is reported once, from the first of its modules.
  ['domain/things/ping.ts', "import { pong } from './pong.ts';\nexport const ping = () => pong;\n", 'no-circular'],
  ['domain/things/pong.ts', "import { ping } from './ping.ts';\nexport const pong = () => ping;\n", null],
  [
    'commands/adapter.ts',
    "import { open } from '../infra/store/adapter.ts';\nexport const o = open;\n",
    'commands-infra-ports-only',
  ],
  [
    'commands/read.ts',
    "import { count } from '../projections/things/queries.ts';\nexport const c = count;\n",
    'commands-not-to-read-side-or-api',
  ],
  ['commands/net.ts', "import net from 'node:net';\nexport const n = net;\n", 'commands-no-io'],
  [
    'projections/things/bus.ts',
    "import { connect } from 'nats';\nexport const c = connect;\n",
    'projections-database-only',
  ],
  [
    'projections/things/pool.ts',
    "import pg from 'pg';\nexport const pool = new pg.Pool();\n",
    'projections-pg-as-type',
  ],
  [
    'projections/things/write.ts',
    "import { make } from '../../commands/things.ts';\nexport const m = make;\n",
    'projections-not-to-write-side-or-api',
  ],
  [
    'projections/things/adapter.ts',
    "import { open } from '../../infra/store/adapter.ts';\nexport const o = open;\n",
    'projections-infra-ports-only',
  ],
  ['projections/things/disk.ts', "import fs from 'node:fs';\nexport const f = fs;\n", 'projections-no-io-modules'],
  [
    'processes/read.ts',
    "import { count } from '../projections/things/queries.ts';\nexport const c = count;\n",
    'processes-reactor-type-only',
  ],
  [
    'processes/http.ts',
    "import { routes } from '../api/things.ts';\nexport const r = routes;\n",
    'processes-not-to-api',
  ],
  [
    'api/adapter.ts',
    "import type { Store } from '../infra/store/port.ts';\nexport type S = Store;\n",
    'api-not-to-infra-or-processes',
  ],
  [
    'api/projector.ts',
    "import { apply } from '../projections/things/projector.ts';\nexport const a = apply;\n",
    'api-queries-not-projectors',
  ],
  ['api/mail.ts', "import nodemailer from 'nodemailer';\nexport const n = nodemailer;\n", 'api-no-outside-clients'],
  ['api/pool.ts', "import pg from 'pg';\nexport const pool = new pg.Pool();\n", 'api-pg-as-type'],
  [
    'infra/store/up.ts',
    "import { routes } from '../../api/things.ts';\nexport const r = routes;\n",
    'infra-adapters-only',
  ],
  ['infra/store/dev.ts', "import t from 'tap';\nexport const tap = t;\n", 'not-to-dev-dep'],
];

t.test('the dependency rules pass the clean tree and name each breach added to it', async (t) => {
  const dir = await project(t, CLEAN);
  const clean = await npmRun(dir, 'check:deps');
  t.equal(clean.code, 0, 'every import the table allows passes');
  t.match(clean.output, /no dependency violations found/);

  await write(dir, Object.fromEntries(BREACHES.map(([file, text]) => [file, text])));
  const broken = await npmRun(dir, 'check:deps');
  t.not(broken.code, 0, 'the check fails');
  const expected = BREACHES.flatMap(([file, , rule]) => (rule ? [`${rule} ${file}`] : [])).sort();
  t.same(breaches(broken.output), expected, 'exactly the breaches added, each by its rule');
});

t.test('the linter refuses an explicit any outside test/, and a misformatted file', async (t) => {
  const dir = await project(t, {
    'projections/things/queries.ts': 'export const rows = (db: unknown): unknown[] => [db];\n',
    'test/loose.test.ts': 'export const loose = (x: any) => x;\n',
  });
  const clean = await npmRun(dir, 'check:biome');
  t.equal(clean.code, 0, `an any in test/ passes: ${clean.output}`);

  await write(dir, { 'api/loose.ts': 'export const loose = (x: any) => x;\n' });
  const loose = await npmRun(dir, 'check:biome');
  t.not(loose.code, 0, 'an any in api/ fails');
  t.match(loose.output, /api\/loose\.ts:1:\d+ lint\/suspicious\/noExplicitAny/);
  await fs.rm(path.join(dir, 'api/loose.ts'));

  await write(dir, { 'domain/spaced.ts': 'export const  spaced = 1\n' });
  const spaced = await npmRun(dir, 'check:biome');
  t.not(spaced.code, 0, 'a misformatted file fails');
  t.match(spaced.output, /domain\/spaced\.ts format/);
});
