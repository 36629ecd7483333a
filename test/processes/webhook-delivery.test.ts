import { fork } from 'node:child_process';
import crypto from 'node:crypto';
import pg from 'pg';
import t from 'tap';
import { createWorkspace } from '../../commands/workspaces/handlers.ts';
import { addSuppression } from '../../commands/suppressions/handlers.ts';
import { createWebhookEndpoint } from '../../commands/webhooks/handlers.ts';
import { openSystem, type System } from '../../system.ts';
import { freshDatabase } from '../support/database.ts';
import { eventually, startReceiver } from '../support/receiver.ts';
import { startSmtpServer } from '../support/smtp.ts';
import { startTcpProxy } from '../support/tcp-proxy.ts';
import { TEST_SECRETS_KEY } from '../support/secrets.ts';
import { runnable } from '../support/paths.ts';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const now = () => new Date().toISOString();

/** A workspace with one endpoint hearing suppressions, made by a process that sends nothing itself. */
async function setUp(t: { teardown(fn: () => unknown): void }, url: string, receiverUrl: string) {
  const quiet = await openSystem(url, {
    secretsKey: TEST_SECRETS_KEY,
    deliver: false,
    webhooks: { allowPrivate: true },
  });
  t.teardown(() => quiet.close());
  const ws = await createWorkspace(quiet.commands, { name: 'Crash', ownerEmail: 'owner@crash.test' });
  const actor = { workspaceId: ws.workspaceId, kind: 'system' as const, id: null };
  const { endpointId } = await createWebhookEndpoint(
    quiet.commands,
    actor,
    {
      url: receiverUrl,
      description: null,
      eventTypes: ['suppression.*'],
      addressAllowlist: null,
      domainAllowlist: null,
    },
    now(),
  );
  return { quiet, actor, endpointId };
}

async function deliveryRows(url: string) {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query('SELECT id, status, attempts FROM webhook_deliveries ORDER BY created_at')).rows;
  } finally {
    await c.end();
  }
}

function startServer(url: string, queue: string) {
  const child = fork(runnable('test/support/webhook-server'), [url, NATS_URL, queue], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const ready = new Promise<void>((resolve, reject) => {
    child.on('message', (m: { type: string }) => m.type === 'ready' && resolve());
    child.on('exit', (code) => reject(new Error(`server exited with ${code} before it was ready`)));
  });
  return { child, ready };
}

t.test('a delivery in flight when the server is SIGKILLed is delivered after it restarts (NATS bus)', async (t) => {
  const url = await freshDatabase(t);
  const receiver = await startReceiver(t, (_r, n) => (n === 1 ? { status: 200, holdMs: 60_000 } : { status: 200 }));
  const { quiet, actor } = await setUp(t, url, receiver.url);
  const queue = `webhooks-crash-${crypto.randomBytes(4).toString('hex')}`;

  const first = startServer(url, queue);
  await first.ready;
  await addSuppression(quiet.commands, actor, { email: 'inflight@example.com', reason: 'manual', detail: null }, now());
  await receiver.waitFor(1);
  first.child.kill('SIGKILL');
  await new Promise((r) => first.child.once('exit', r));
  t.match(await deliveryRows(url), [{ status: 'pending', attempts: 1 }], 'killed mid-POST: claimed, not settled');

  const second = startServer(url, queue);
  t.teardown(() => void second.child.kill('SIGKILL'));
  await second.ready;
  await receiver.waitFor(2);
  const rows = await eventually(async () => {
    const r = await deliveryRows(url);
    return r[0]?.status === 'delivered' && r;
  });
  t.match(rows, [{ status: 'delivered', attempts: 2 }]);
  t.equal(
    receiver.received[1]!.headers['webhook-id'],
    receiver.received[0]!.headers['webhook-id'],
    'the same message, so the receiver can de-duplicate',
  );
});

t.test(
  'deliveries made while no process sends are sent when one starts; a job the bus lost is enqueued again',
  async (t) => {
    const url = await freshDatabase(t);
    const receiver = await startReceiver(t);
    const { quiet, actor } = await setUp(t, url, receiver.url);
    await addSuppression(
      quiet.commands,
      actor,
      { email: 'waiting@example.com', reason: 'manual', detail: null },
      now(),
    );
    // A write answers once its read models hold it, not once the fan-out has queued its deliveries.
    const waiting = await eventually(async () => {
      const rows = await deliveryRows(url);
      return rows.length > 0 && rows;
    });
    t.match(waiting, [{ status: 'pending', attempts: 0 }]);

    const queue = `webhooks-lost-${crypto.randomBytes(4).toString('hex')}`;
    const sender: System = await openSystem(url, {
      secretsKey: TEST_SECRETS_KEY,
      natsUrl: NATS_URL,
      project: false,
      webhooks: { allowPrivate: true, pollMs: 1500, staleAfterMs: 300, queue },
    });
    t.teardown(() => sender.close());
    await receiver.waitFor(1);
    await eventually(async () => (await deliveryRows(url))[0]?.status === 'delivered');

    // A job claimed for the bus and never published (the bus lost it): only the database knows it is
    // due. The mark is made only on a job no poll has claimed yet; should the sender's poll take the
    // new job first, the mark would test nothing, so another address tries.
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    t.teardown(() => c.end());
    let lost: string | undefined;
    for (let i = 0; lost === undefined && i < 5; i++) {
      const email = `lost${i}@example.com`;
      await addSuppression(quiet.commands, actor, { email, reason: 'manual', detail: null }, now());
      await eventually(async () => (await deliveryRows(url)).length === i + 2);
      const marked = await c.query(
        `UPDATE webhook_deliveries SET enqueued_at = now() WHERE status = 'pending' AND enqueued_at IS NULL`,
      );
      if (marked.rowCount === 1) lost = email;
    }
    t.ok(lost, 'a new job was marked claimed before a poll took it');
    await eventually(async () => receiver.received.some((r) => JSON.parse(r.body).data.email === lost), 10_000);
  },
);

t.test('a NATS outage delays deliveries and loses none', async (t) => {
  const url = await freshDatabase(t);
  const receiver = await startReceiver(t);
  const { quiet, actor } = await setUp(t, url, receiver.url);
  const proxy = await startTcpProxy('127.0.0.1', Number(new URL(NATS_URL).port || 4222));
  t.teardown(() => proxy.close());
  const queue = `webhooks-outage-${crypto.randomBytes(4).toString('hex')}`;
  // 20 ms between reconnects (and nats.js's jitter): the outage lasts past 15 attempts, more than the
  // 10 nats.js allows by default. A publish the bus does not confirm fails after 1 s, not 5.
  const sender: System = await openSystem(url, {
    secretsKey: TEST_SECRETS_KEY,
    natsUrl: `nats://127.0.0.1:${proxy.port}`,
    nats: { reconnectWaitMs: 20, requestTimeoutMs: 1_000 },
    project: false,
    webhooks: { allowPrivate: true, pollMs: 100, staleAfterMs: 1_000, queue },
  });
  t.teardown(() => sender.close());
  await addSuppression(quiet.commands, actor, { email: 'before@example.com', reason: 'manual', detail: null }, now());
  await receiver.waitFor(1);

  await proxy.cutCounting();
  for (const n of [1, 2, 3])
    await addSuppression(
      quiet.commands,
      actor,
      { email: `during-${n}@example.com`, reason: 'manual', detail: null },
      now(),
    );
  // Over when the client has tried past its default limit and the sender has claimed all three
  // for a bus that is away.
  await eventually(async () => proxy.resets > 15 && (await deliveryRows(url)).every((d) => d.attempts > 0), 30_000);
  t.equal(receiver.received.length, 1, 'nothing is delivered while the bus is away');
  t.match(await deliveryRows(url), [
    { status: 'delivered' },
    { status: 'pending' },
    { status: 'pending' },
    { status: 'pending' },
  ]);

  await proxy.restore();
  await receiver.waitFor(4, 30_000);
  const rows = await eventually(async () => {
    const r = await deliveryRows(url);
    return r.every((d) => d.status === 'delivered') && r;
  });
  t.equal(rows.length, 4);
  const emails = receiver.received.map((r) => JSON.parse(r.body).data.email).sort();
  t.same(
    [...new Set(emails)],
    ['before@example.com', 'during-1@example.com', 'during-2@example.com', 'during-3@example.com'],
  );
});

t.test('a switch-off notice the mail server refused until the process stopped is sent by the next one', async (t) => {
  const url = await freshDatabase(t);
  const receiver = await startReceiver(t, () => ({ status: 500 }));
  const smtp = await startSmtpServer(t, () => false);
  const { quiet, actor, endpointId } = await setUp(t, url, receiver.url);
  const options = {
    secretsKey: TEST_SECRETS_KEY,
    project: false,
    smtpUrl: smtp.url,
    // A retry a millisecond after each failure, looked for at once: the 100th comes quickly.
    webhooks: { allowPrivate: true, pollMs: 1, retryScheduleMs: Array(150).fill(1) },
    webhookNotices: { pollMs: 20, retryMs: [200] },
  };
  const first = await openSystem(url, options);
  await addSuppression(quiet.commands, actor, { email: 'failing@example.com', reason: 'manual', detail: null }, now());
  await eventually(async () => smtp.offered() >= 1, 30_000);
  await first.close();
  t.equal(smtp.mails.length, 0, 'nothing was taken before the restart');

  smtp.accept = () => true;
  const second = await openSystem(url, options);
  t.teardown(() => second.close());
  const mail = await eventually(async () => smtp.mails[0]);
  t.same(mail.to, ['owner@crash.test']);
  t.match(mail.text, new RegExp(endpointId));
  await new Promise((r) => setTimeout(r, 500));
  t.equal(smtp.mails.length, 1, 'sent once');
});
