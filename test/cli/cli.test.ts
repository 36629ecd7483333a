import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import t from 'tap';
import { freshDatabase } from '../support/database.ts';

const run = promisify(execFile);

async function cli(url: string, ...args: string[]) {
  const { stdout } = await run('node', ['--import=tsx', 'cli/main.ts', ...args], { env: { ...process.env, DATABASE_URL: url }, timeout: 60_000 });
  return stdout.trim().split('\n').filter(Boolean);
}

t.test('operator CLI against the same database as the server', async (t) => {
  const url = await freshDatabase(t);
  const [line] = await cli(url, 'workspace', 'create', '--name', 'Acme', '--owner-email', 'Boss@Acme.test');
  const created = JSON.parse(line!);
  t.same(Object.keys(created), ['workspaceId', 'ownerUserId', 'apiKey']);
  t.match(created.apiKey, /^wms_live_[0-9a-z]{24}_[A-Za-z0-9_-]{43}$/);

  const status = (await cli(url, 'projections', 'status')).map((l) => JSON.parse(l));
  t.ok(status.some((s) => s.name === 'api_keys'));
  t.ok(status.every((s) => s.lag === 0), 'caught up');

  const rebuilt = JSON.parse((await cli(url, 'projections', 'rebuild', 'api_keys'))[0]!);
  t.match(rebuilt, { name: 'api_keys', events: 1 });

  const history = (await cli(url, 'history', '--workspace', created.workspaceId)).map((l) => JSON.parse(l));
  t.same(history.map((e) => e.type), ['WorkspaceCreated', 'ApiKeyCreated']);
  t.equal(history[0].data.ownerEmail, 'boss@acme.test');
  t.equal(history[1].data.secretHash, '[redacted]');
  t.ok(history[0].position < history[1].position);
  const onlyKeys = (await cli(url, 'history', '--workspace', created.workspaceId, '--stream', 'api-keys')).map((l) => JSON.parse(l));
  t.same(onlyKeys.map((e) => e.type), ['ApiKeyCreated']);
  const byType = await cli(url, 'history', '--workspace', created.workspaceId, '--type', 'WorkspaceCreated');
  t.equal(byType.length, 1);
  const future = await cli(url, 'history', '--workspace', created.workspaceId, '--since', '2999-01-01T00:00:00Z');
  t.equal(future.length, 0);
  const other = await cli(url, 'history', '--workspace', 'ws_000000000000000000000000');
  t.equal(other.length, 0);

  await t.rejects(cli(url, 'projections', 'rebuild', 'nope'));
  await t.rejects(cli(url, 'workspace', 'create', '--name', 'x'));
});
