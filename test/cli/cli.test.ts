import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import t from 'tap';
import { runCli } from '../../cli/run.ts';
import { SCOPEABLE } from '../../domain/shared/permissions.ts';
import { openSystem, serve } from '../../system.ts';
import { freshDatabase } from '../support/database.ts';
import { entryArgs } from '../support/paths.ts';
import { TEST_SECRETS_KEY } from '../support/secrets.ts';

const run = promisify(execFile);

/**
 * A CLI command run in this process (importing the system once per file, not once per command):
 * its output lines, or a rejection with its exit code and what it wrote to stderr, as a process's.
 */
async function cli(url: string, ...args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const env = { ...process.env, DATABASE_URL: url, SECRETS_KEY: TEST_SECRETS_KEY };
  const code = await runCli(args, { out: (l) => out.push(l), err: (l) => err.push(l) }, env);
  if (code !== 0) throw Object.assign(new Error(`exit ${code}`), { code, stderr: err.join('\n') });
  return out;
}

t.test('npm run cli: the entry point prints the result; a usage error is code 2', async (t) => {
  const url = await freshDatabase(t);
  const env = { ...process.env, DATABASE_URL: url, SECRETS_KEY: TEST_SECRETS_KEY };
  const { stdout } = await run(
    'node',
    [...entryArgs('cli/main'), 'workspace', 'create', '--name', 'A', '--owner-email', 'a@a.test'],
    {
      env,
      timeout: 60_000,
    },
  );
  t.match(JSON.parse(stdout), { workspaceId: /^ws_/ });
  const err: string[] = [];
  t.equal(await runCli(['nonsense'], { out: () => {}, err: (l) => err.push(l) }, env), 2, 'a usage error');
  t.match(err.join('\n'), /^Usage: npm run cli/);
});

t.test('operator CLI against the same database as the server', async (t) => {
  const url = await freshDatabase(t);
  const [line] = await cli(url, 'workspace', 'create', '--name', 'Acme', '--owner-email', 'Boss@Acme.test');
  const created = JSON.parse(line!);
  t.same(Object.keys(created), ['workspaceId', 'ownerUserId', 'apiKey']);
  t.match(created.apiKey, /^wms_live_[0-9a-z]{24}_[A-Za-z0-9_-]{43}$/);

  const status = (await cli(url, 'projections', 'status')).map((l) => JSON.parse(l));
  t.ok(status.some((s) => s.name === 'api_keys'));
  t.ok(
    status.every((s) => s.lag === 0),
    'caught up',
  );

  const rebuilt = JSON.parse((await cli(url, 'projections', 'rebuild', 'api_keys'))[0]!);
  t.match(rebuilt, { name: 'api_keys', events: 1 });

  const history = (await cli(url, 'history', '--workspace', created.workspaceId)).map((l) => JSON.parse(l));
  t.same(
    history.map((e) => e.type),
    ['WorkspaceCreated', 'ApiKeyCreated'],
  );
  t.equal(history[0].data.ownerEmail, 'boss@acme.test');
  t.equal(history[1].data.secretHash, '[redacted]');
  t.ok(history[0].position < history[1].position);
  const onlyKeys = (await cli(url, 'history', '--workspace', created.workspaceId, '--stream', 'api-keys')).map((l) =>
    JSON.parse(l),
  );
  t.same(
    onlyKeys.map((e) => e.type),
    ['ApiKeyCreated'],
  );
  const byType = await cli(url, 'history', '--workspace', created.workspaceId, '--type', 'WorkspaceCreated');
  t.equal(byType.length, 1);
  const future = await cli(url, 'history', '--workspace', created.workspaceId, '--since', '2999-01-01T00:00:00Z');
  t.equal(future.length, 0);
  const other = await cli(url, 'history', '--workspace', 'ws_000000000000000000000000');
  t.equal(other.length, 0);

  await t.rejects(cli(url, 'projections', 'rebuild', 'nope'), {
    code: 2,
    stderr: /unknown projection nope; rebuildable: .*\bthreads\b/,
  });
  await t.rejects(cli(url, 'workspace', 'create', '--name', 'x'), {
    code: 2,
    stderr: /workspace create needs --name <name> and --owner-email <email>/,
  });
});

t.test('keys create: an operator issues a key for an existing workspace, the way back in', async (t) => {
  const url = await freshDatabase(t);
  const system = await openSystem(url, { secretsKey: TEST_SECRETS_KEY });
  const app = await serve(system);
  t.teardown(async () => {
    await app.close();
    await system.close();
  });
  const ping = async (token: string, path = '/ping') =>
    (await app.inject({ method: 'GET', url: path, headers: { authorization: `Bearer ${token}` } })).json();
  const failure = async (...args: string[]) => {
    const error = await cli(url, ...args).then(
      () => null,
      (e: { code: number; stderr: string }) => e,
    );
    return error && [error.code, error.stderr.trim()];
  };

  const created = JSON.parse(
    (await cli(url, 'workspace', 'create', '--name', 'Acme', '--owner-email', 'boss@acme.test'))[0]!,
  );
  const ownerKeyId = created.apiKey.split('_')[2];
  const revoked = await app.inject({
    method: 'DELETE',
    url: `/keys/${ownerKeyId}`,
    headers: { authorization: `Bearer ${created.apiKey}` },
  });
  t.equal(revoked.statusCode, 200, 'the only key revoked: locked out');

  const [line, ...rest] = await cli(
    url,
    'keys',
    'create',
    '--workspace',
    created.workspaceId,
    '--scopes',
    'all',
    '--name',
    'Recovery',
  );
  t.same(rest, [], 'one line');
  const issued = JSON.parse(line!);
  t.same(Object.keys(issued), ['workspaceId', 'keyId', 'mode', 'apiKey']);
  t.match(issued, {
    workspaceId: created.workspaceId,
    mode: 'live',
    apiKey: /^wms_live_[0-9a-z]{24}_[A-Za-z0-9_-]{43}$/,
  });
  t.same((await ping(issued.apiKey)).scopes, [...SCOPEABLE], 'back in, with every scope-able permission');
  const listed = await ping(issued.apiKey, `/keys/${issued.keyId}`);
  t.match(listed, { name: 'Recovery', roleId: null, addressAllowlist: null });
  t.notOk(JSON.stringify(listed).includes(issued.apiKey.slice(-43)), 'the token is printed once, never stored');

  const role = await app.inject({
    method: 'POST',
    url: '/roles',
    headers: { authorization: `Bearer ${issued.apiKey}` },
    payload: { name: 'Senders', permissions: ['emails:send'] },
  });
  const narrow = JSON.parse(
    (
      await cli(
        url,
        'keys',
        'create',
        '--workspace',
        created.workspaceId,
        '--scopes',
        'emails:send,keys:read',
        '--role',
        role.json().id,
        '--mode',
        'test',
        '--address-allowlist',
        'A@Example.com, b@other.org',
        '--domain-allowlist',
        'example.com',
      )
    )[0]!,
  );
  t.match(narrow.apiKey, /^wms_test_/);
  t.match(await ping(narrow.apiKey, '/keys/self'), {
    mode: 'test',
    roleId: role.json().id,
    grantedScopes: ['emails:send', 'keys:read'],
    scopes: ['emails:send'],
    addressAllowlist: ['b@other.org'],
    domainAllowlist: ['example.com'],
  });

  const [code, message] = (await failure(
    'keys',
    'create',
    '--workspace',
    'ws_000000000000000000000000',
    '--scopes',
    'all',
  ))!;
  t.equal(code, 1);
  t.match(message, /resource_not_found/, 'an unknown workspace');
  t.match(
    await failure('keys', 'create', '--workspace', created.workspaceId, '--scopes', 'billing:read'),
    [1, /invalid_parameter \(scopes\.0\)/],
    'console-only',
  );
  t.match(
    await failure(
      'keys',
      'create',
      '--workspace',
      created.workspaceId,
      '--scopes',
      'all',
      '--role',
      'role_000000000000000000000000',
    ),
    [1, /role_not_found/],
  );
  t.match(await failure('keys', 'create', '--workspace', created.workspaceId), [2, /--scopes/]);
  t.match(await failure('keys', 'create', '--workspace', created.workspaceId, '--scopes', 'emails:sned'), [
    2,
    /not a permission/,
  ]);
  t.match(await failure('keys', 'create', '--workspace', created.workspaceId, '--scopes', 'all', '--mode', 'sandbox'), [
    2,
    /--mode/,
  ]);
  t.match(
    await failure(
      'keys',
      'create',
      '--workspace',
      created.workspaceId,
      '--scopes',
      'all',
      '--address-allowlist',
      'nobody',
    ),
    [2, /--address-allowlist/],
  );
  t.equal(
    (await app.inject({ method: 'GET', url: '/keys', headers: { authorization: `Bearer ${issued.apiKey}` } })).json()
      .data.length,
    2,
    'refusals issued nothing',
  );
});
