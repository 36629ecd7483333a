import { parseArgs } from 'node:util';
import { addressAllowlist, domainAllowlist } from '../api/schemas.ts';
import { issueOperatorKey } from '../commands/api-keys/handlers.ts';
import { createWorkspace } from '../commands/workspaces/handlers.ts';
import { DomainError } from '../domain/shared/errors.ts';
import { isPermission, SCOPEABLE, type Permission } from '../domain/shared/permissions.ts';
import { readConfig } from '../infra/config.ts';
import { ArchiveRefused } from '../infra/imports/port.ts';
import { PostgresTextIndex } from '../infra/search/postgres.ts';
import { RestoreFailed, RestoreRefused, restoreWorkspace } from '../processes/exports/restore.ts';
import { rebuildProjection } from '../projections/rebuild.ts';
import { mailboxLookups, openSystem, resolveDatabaseUrl, type System } from '../system.ts';
import { printHistory } from './history.ts';

const OWNER_EMAIL = /^[^\s@]+@[^\s@]+$/;

const USAGE = `Usage: npm run cli -- <command>
  workspace create --name <name> --owner-email <email>
  workspace import <export.zip> --owner-email <email> [--name <name>]
                            a new workspace from a workspace export (what is not restored is listed)
  keys create --workspace <id> --scopes <all | s1,s2,...> [--name N] [--role <role id>] [--mode live|test]
              [--address-allowlist a1,a2,...] [--domain-allowlist d1,d2,...]
  projections status        one JSON line per projection: lag (its events left), behind, running, worker
  projections rebuild <name>
  history --workspace <id> [--stream S] [--type T] [--since ISO]`;

/** Where a command writes: a line of its result, or a line saying why it refused. */
export interface CliOutput {
  out(line: string): void;
  err(line: string): void;
}

/**
 * Operator commands against the same database as the server (the embedded one included: the
 * CLI attaches to a running embedded PostgreSQL, or starts it for the duration of the command).
 * The exit code: 0 done, 1 refused by the domain, 2 a usage error.
 */
export async function runCli(argv: string[], io: CliOutput, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      'owner-email': { type: 'string' },
      workspace: { type: 'string' },
      stream: { type: 'string' },
      type: { type: 'string' },
      since: { type: 'string' },
      scopes: { type: 'string' },
      role: { type: 'string' },
      mode: { type: 'string' },
      'address-allowlist': { type: 'string' },
      'domain-allowlist': { type: 'string' },
    },
  });
  const [group, action, arg] = positionals;
  const command = group === 'history' ? 'history' : `${group ?? ''} ${action ?? ''}`.trim();
  if (
    ![
      'workspace create',
      'workspace import',
      'keys create',
      'projections status',
      'projections rebuild',
      'history',
    ].includes(command)
  ) {
    io.err(USAGE);
    return 2;
  }
  const config = readConfig(env);
  const database = await resolveDatabaseUrl(config);
  // Projects only when no server holds the projection lock, so a write waits for a read model
  // that someone keeps up to date; never for `projections status`, which reports on the servers.
  const system = await openSystem(database.url, {
    eventStoreUrl: config.eventStoreUrl,
    natsUrl: config.natsUrl,
    poolSize: 4,
    deliver: false,
    project: command !== 'projections status',
    secretsKey: config.secretsKey,
    dataDir: config.dataDir,
    dns: { servers: config.dnsServers },
    mailHosts: config.mailHosts,
  });
  try {
    return await run(system, io, command, values, arg);
  } finally {
    await system.close();
    await database.stop();
  }
}

async function run(
  system: System,
  io: CliOutput,
  command: string,
  values: Record<string, string | boolean | undefined>,
  arg: string | undefined,
): Promise<number> {
  switch (command) {
    case 'workspace create': {
      const name = values.name;
      const ownerEmail = values['owner-email'];
      if (typeof name !== 'string' || !name.trim() || typeof ownerEmail !== 'string' || !OWNER_EMAIL.test(ownerEmail)) {
        io.err('workspace create needs --name <name> and --owner-email <email>');
        return 2;
      }
      io.out(JSON.stringify(await createWorkspace(system.commands, { name: name.trim(), ownerEmail })));
      return 0;
    }
    case 'workspace import':
      return importWorkspace(system, io, values, arg);
    case 'keys create':
      return createKey(system, io, values);
    case 'projections status':
      for (const s of await system.runner.status()) io.out(JSON.stringify(s));
      return 0;
    case 'projections rebuild': {
      // Reactors are never rebuilt: replaying the log would do their work (sent webhooks) again.
      const projector = system.runner.projectors.find((p) => p.name === arg);
      if (!projector) {
        io.err(
          `unknown projection ${arg ?? '(none)'}; rebuildable: ${system.runner.projectors.map((p) => p.name).join(', ')}`,
        );
        return 2;
      }
      const { db, pool } = system.database;
      io.out(JSON.stringify(await rebuildProjection(db, pool, system.store, system.runner, projector)));
      return 0;
    }
    case 'history': {
      const workspaceId = values.workspace;
      if (typeof workspaceId !== 'string') {
        io.err('history needs --workspace <id>');
        return 2;
      }
      const since = typeof values.since === 'string' ? new Date(values.since) : undefined;
      if (since && Number.isNaN(since.getTime())) {
        io.err('--since must be an ISO 8601 instant');
        return 2;
      }
      await printHistory(
        system,
        { workspaceId, stream: values.stream as string | undefined, type: values.type as string | undefined, since },
        io.out,
      );
      return 0;
    }
  }
  return 2;
}

/**
 * A new workspace from a workspace export (processes/exports/restore.ts): one JSON line with its
 * ids, its owner key (this once), what was restored and what was skipped with the reason. Exit 1
 * for a file refused (nothing written) and for a restore stopped midway (its workspace named).
 */
async function importWorkspace(
  system: System,
  io: CliOutput,
  values: Record<string, string | boolean | undefined>,
  file: string | undefined,
): Promise<number> {
  const ownerEmail = values['owner-email'];
  const name = typeof values.name === 'string' ? values.name.trim() : null;
  if (!file || typeof ownerEmail !== 'string' || !OWNER_EMAIL.test(ownerEmail) || name === '') {
    io.err(
      'workspace import needs <export.zip> and --owner-email <email> (the export names no owner); --name is optional',
    );
    return 2;
  }
  try {
    const result = await restoreWorkspace(
      {
        commands: system.commands,
        blobs: system.blobs,
        texts: new PostgresTextIndex(system.database.pool),
        lookups: mailboxLookups(system.readDb),
        domains: system.domains,
      },
      file,
      { name, ownerEmail },
      // Said as soon as it exists: a restore killed past this point leaves that workspace behind.
      (workspaceId) => io.err(`workspace import: the file checks; restoring into the new workspace ${workspaceId}`),
    );
    io.out(JSON.stringify(result));
    return 0;
  } catch (error) {
    if (error instanceof RestoreFailed) {
      io.err(
        `workspace import: stopped after creating workspace ${error.workspaceId}: ${error.message}. ` +
          'It keeps what was restored before this and its owner key was never shown: ' +
          `\`keys create --workspace ${error.workspaceId} --scopes all\` reaches it. The restore does not resume: ` +
          "delete that workspace's addresses and domains through the api (or another import meets them as " +
          '`domain_in_use`), then import again into a new workspace.',
      );
      return 1;
    }
    if (error instanceof ArchiveRefused || error instanceof RestoreRefused) {
      io.err(`workspace import: ${error.message}`);
      return 1;
    }
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      io.err(`workspace import: no file ${file}`);
      return 2;
    }
    throw error;
  }
}

/**
 * Issues a key for an existing workspace and prints its token, this once: the way back in when
 * no key of the workspace can manage keys any more. The same rules as `POST /keys` apply, with the
 * operator's authority (every scope-able permission, live, every address).
 */
async function createKey(
  system: System,
  io: CliOutput,
  values: Record<string, string | boolean | undefined>,
): Promise<number> {
  const usage = (problem: string) => {
    io.err(`keys create: ${problem}`);
    return 2;
  };
  const text = (name: string) => (typeof values[name] === 'string' ? (values[name] as string) : undefined);
  const list = (name: string) =>
    text(name)
      ?.split(',')
      .map((s) => s.trim())
      .filter(Boolean) ?? null;
  const workspaceId = text('workspace');
  if (!workspaceId) return usage('needs --workspace <id>');
  const scopes = text('scopes') === 'all' ? [...SCOPEABLE] : list('scopes');
  if (scopes === null) return usage('needs --scopes: `all` or a comma-separated list');
  const unknown = scopes.find((s) => !isPermission(s));
  if (unknown !== undefined) return usage(`\`${unknown}\` is not a permission`);
  const mode = text('mode') ?? 'live';
  if (mode !== 'live' && mode !== 'test') return usage('--mode is live or test');
  const addresses = addressAllowlist.safeParse(list('address-allowlist'));
  if (!addresses.success) return usage('--address-allowlist takes comma-separated addresses');
  const domains = domainAllowlist.safeParse(list('domain-allowlist'));
  if (!domains.success) return usage('--domain-allowlist takes comma-separated domain names');
  const name = text('name')?.trim() || null;
  if (name !== null && name.length > 100) return usage('--name is at most 100 characters');
  try {
    const { keyId, token } = await issueOperatorKey(
      system.commands,
      workspaceId,
      {
        name,
        mode,
        scopes: scopes as Permission[],
        roleId: text('role') ?? null,
        addressAllowlist: addresses.data ?? null,
        domainAllowlist: domains.data ?? null,
        expiresAt: null,
      },
      new Date().toISOString(),
    );
    io.out(JSON.stringify({ workspaceId, keyId, mode, apiKey: token }));
    return 0;
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    io.err(`keys create: ${error.code}${error.param ? ` (${error.param})` : ''}: ${error.message}`);
    return 1;
  }
}
