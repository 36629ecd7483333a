import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import os from 'node:os';
import { promisify } from 'node:util';
import t from 'tap';
import { createWorkspace } from '../../commands/workspaces/handlers.ts';
import { suppressionStream } from '../../domain/suppressions/events.ts';
import { reactors } from '../../processes/all.ts';
import { projectors } from '../../projections/all.ts';
import type { ProjectionStatus } from '../../projections/runner.ts';
import { openSystem } from '../../system.ts';
import { freshDatabase } from '../support/database.ts';
import { entryArgs } from '../support/paths.ts';
import { eventually } from '../support/receiver.ts';

const run = promisify(execFile);
const followers = [...projectors, ...reactors];

/** `npm run cli -- projections status`, from a process of its own as an operator runs it. */
async function cliStatus(url: string): Promise<ProjectionStatus[]> {
  const { stdout } = await run('node', [...entryArgs('cli/main'), 'projections', 'status'], {
    env: { ...process.env, DATABASE_URL: url },
    timeout: 60_000,
  });
  return stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line));
}

t.test('projections status: lag is the work left, running says a live server runs it', async (t) => {
  const url = await freshDatabase(t);
  const server = await openSystem(url, { deliver: false });
  let serverOpen = true;
  t.teardown(() => (serverOpen ? server.close() : undefined));
  const ws = await createWorkspace(server.commands, { name: 'Ops', ownerEmail: 'owner@ops.test' });

  const live = await cliStatus(url);
  t.same(live.map((s) => s.name).sort(), followers.map((f) => f.name).sort(), 'one line per projector and reactor');
  for (const s of live) {
    t.match(
      s,
      { lag: 0, running: true, worker: `${os.hostname()}:${process.pid}` },
      `${s.name}: caught up, running here`,
    );
  }

  await server.close();
  serverOpen = false;
  const operator = await openSystem(url, { project: false, deliver: false });
  t.teardown(() => operator.close());
  const stopped = await operator.runner.status();
  t.ok(
    stopped.every((s) => !s.running && s.worker === null && s.lag === 0),
    'a server that stopped cleanly runs nothing, at once',
  );

  // An event appended while no server projects: only the followers that handle it have work left;
  // for every other one the checkpoint stands behind it with nothing to do.
  await operator.store.append(
    suppressionStream(ws.workspaceId, 'late@example.com'),
    [
      {
        type: 'SuppressionAdded',
        version: 1,
        data: {
          suppressionId: crypto.randomUUID(),
          email: 'late@example.com',
          reason: 'manual',
          detail: null,
          removable: true,
          createdAt: new Date().toISOString(),
        },
        metadata: { workspaceId: ws.workspaceId, actor: { kind: 'system', id: null }, requestId: null },
      },
    ],
    'no_stream',
  );
  const behind = await cliStatus(url);
  const handlers = followers.filter((f) => f.handles.includes('SuppressionAdded')).map((f) => f.name);
  t.ok(handlers.includes('suppressions'));
  for (const s of behind) {
    const handles = handlers.includes(s.name);
    t.equal(s.lag, handles ? 1 : 0, `${s.name}: lag ${handles ? 1 : 0}`);
    t.ok(s.behind >= 1 && s.position < s.head, `${s.name}: its checkpoint is behind the head`);
    t.equal(s.running, false, `${s.name}: nobody runs it`);
  }

  // A heartbeat that stopped (a server killed, its session gone) reads as not running once stale.
  await operator.database.pool.query(
    `INSERT INTO projection_heartbeats (name, worker, beat_at)
     SELECT name, 'gone:1', now() - interval '1 minute' FROM projection_checkpoints`,
  );
  const stale = await operator.runner.status();
  t.ok(
    stale.every((s) => !s.running && s.worker === 'gone:1'),
    'a stale heartbeat names its worker but is not running',
  );

  const again = await openSystem(url, { deliver: false });
  t.teardown(() => again.close());
  const caughtUp = await eventually(async () => {
    const all = await operator.runner.status();
    return all.every((s) => s.lag === 0 && s.running) && all;
  }, 30_000);
  t.ok(
    caughtUp.every((s) => s.worker === `${os.hostname()}:${process.pid}` && s.heartbeatAt !== null),
    'a new server takes over, beats for every follower and catches up',
  );
  t.equal(
    (await operator.database.pool.query('SELECT id FROM suppressions WHERE email = $1', ['late@example.com'])).rows
      .length,
    1,
    'the late event was projected',
  );
});
