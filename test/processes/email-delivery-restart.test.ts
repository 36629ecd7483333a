import crypto from 'node:crypto';
import t from 'tap';
import { createWorkspace } from '../../commands/workspaces/handlers.ts';
import { openSystem, serve, type SystemOptions } from '../../system.ts';
import { freshDatabase } from '../support/database.ts';
import { startDnsServer } from '../support/dns-server.ts';
import { HOSTS, publish } from '../support/domains.ts';
import { acceptEmail, eventsWhen, outcomes, settled, type Sender } from '../support/delivery.ts';
import { sharedFreePort, startMxServer } from '../support/mx-server.ts';
import { verifyDkim } from '../support/outbound.ts';
import { TEST_SECRETS_KEY } from '../support/secrets.ts';

t.test(
  'through a relay, across a restart: a deferral and a scheduled send made by one process, delivered by the next',
  async (t) => {
    const url = await freshDatabase(t);
    const dns = await startDnsServer(t);
    const port = await sharedFreePort(['127.0.0.1']);
    // The relay is full until the first process is gone.
    let full = true;
    const relay = await startMxServer(t, '127.0.0.1', port, {
      auth: { user: 'relay', pass: 'relay-pa55' },
      data: () => (full ? { code: 451, message: '4.3.0 Queue full, try later' } : null),
    });
    const options: SystemOptions = {
      secretsKey: TEST_SECRETS_KEY,
      dns: { servers: [dns.address], timeoutMs: 1000 },
      mailHosts: HOSTS,
      domainChecks: { pollMs: 3_600_000 },
      outbound: { relayUrl: `smtp://relay:relay-pa55@127.0.0.1:${port}` },
      emailDelivery: { pollMs: 20, retry: { delaysMs: [1_500], intervalMs: 1_500, lifetimeMs: 60_000 } },
    };

    const first = await openSystem(url, options);
    const app = await serve(first);
    const ws = await createWorkspace(first.commands, { name: 'Relay', ownerEmail: 'owner@example.com' });
    const added = await app.inject({
      method: 'POST',
      url: '/domains',
      headers: { authorization: `Bearer ${ws.apiKey}` },
      payload: { domain: 'relayed.example.com' },
    });
    publish(dns, added.json().records);
    const s: Sender = {
      workspaceId: ws.workspaceId,
      apiKey: ws.apiKey,
      domainId: added.json().id,
      domain: 'relayed.example.com',
      email: 'news@relayed.example.com',
    };
    const deferred = await acceptEmail(first, s, { to: ['ann@one.example', 'bob@two.example'] });
    await eventsWhen(first, deferred.stream, (e) => e.filter((e) => e.type === 'EmailRecipientDeferred').length === 2);
    const scheduled = await acceptEmail(first, s, {
      to: ['cy@three.example'],
      scheduledAt: new Date(Date.now() + 1_000).toISOString(),
    });
    await app.close();
    await first.close();
    t.equal(relay.received.length, 0, 'nothing went out before the restart');
    full = false;

    const second = await openSystem(url, options);
    t.teardown(() => second.close());
    const a = await eventsWhen(second, deferred.stream, settled(2));
    // The two domains' rows go out side by side, in either order. On a loaded machine the first
    // process may have retried into the full relay again before it closed: more deferrals, never
    // a delivery, and the attempts stay numbered in order.
    for (const recipient of ['ann@one.example', 'bob@two.example']) {
      const own = outcomes(a).filter((o) => o[1] === recipient);
      t.same(
        own,
        [
          ...own.slice(0, -1).map((_, i) => ['Deferred', recipient, i + 1, 451]),
          ['Delivered', recipient, own.length, 250],
        ],
        `${recipient}: deferred by the full relay, then delivered once`,
      );
    }
    t.match(a.at(-1)?.data, { mx: `smtp://127.0.0.1:${port}` });
    const b = outcomes(await eventsWhen(second, scheduled.stream, settled(1)));
    t.same(
      b,
      [
        ...b.slice(0, -1).map((_, i) => ['Deferred', 'cy@three.example', i + 1, 451]),
        ['Delivered', 'cy@three.example', b.length, 250],
      ],
      'the scheduled send delivered once, by the second process',
    );

    // One hand-over per recipient domain, as direct delivery: each domain keeps its own retry time.
    t.same(relay.received.map((r) => r.rcptTo).sort(), [
      ['ann@one.example'],
      ['bob@two.example'],
      ['cy@three.example'],
    ]);
    t.ok(relay.received.every((r) => r.user === 'relay' && r.mailFrom.endsWith('@bounces.relayed.example.com')));
    for (const r of relay.received) t.equal((await verifyDkim(dns, r.raw))[0]?.status.result, 'pass');
  },
);

t.test('on NATS: the jobs travel the JetStream queue, delivered to the MX and signed', async (t) => {
  const url = await freshDatabase(t);
  const dns = await startDnsServer(t);
  const port = await sharedFreePort(['127.0.0.1']);
  const mx = await startMxServer(t, '127.0.0.1', port);
  dns.set('nats.example', { MX: [{ exchange: 'mx.nats.example', priority: 10 }] });
  dns.set('mx.nats.example', { A: ['127.0.0.1'] });
  const tag = crypto.randomBytes(4).toString('hex');
  const system = await openSystem(url, {
    secretsKey: TEST_SECRETS_KEY,
    natsUrl: process.env.NATS_URL ?? 'nats://127.0.0.1:4222',
    dns: { servers: [dns.address], timeoutMs: 1000 },
    mailHosts: HOSTS,
    domainChecks: { pollMs: 3_600_000 },
    outbound: { mxPort: port, mxAllowPrivate: true, heloName: 'mta.mail.test' },
    emailDelivery: { pollMs: 20, queue: `email-deliveries-${tag}` },
    lanePauses: { queue: `sending-lane-pauses-${tag}` },
    webhooks: { queue: `webhook-deliveries-${tag}` },
  });
  t.teardown(() => system.close());
  const app = await serve(system);
  t.teardown(() => app.close());
  const ws = await createWorkspace(system.commands, { name: 'Nats', ownerEmail: 'owner@example.com' });
  const added = await app.inject({
    method: 'POST',
    url: '/domains',
    headers: { authorization: `Bearer ${ws.apiKey}` },
    payload: { domain: 'bus.example.com' },
  });
  publish(dns, added.json().records);
  const s: Sender = {
    workspaceId: ws.workspaceId,
    apiKey: ws.apiKey,
    domainId: added.json().id,
    domain: 'bus.example.com',
    email: 'news@bus.example.com',
  };
  const sent = await acceptEmail(system, s, { to: ['ann@nats.example'] });
  const events = await eventsWhen(system, sent.stream, settled(1));
  t.same(outcomes(events), [['Delivered', 'ann@nats.example', 1, 250]]);
  t.equal(mx.received.length, 1);
  t.equal((await verifyDkim(dns, mx.received[0]!.raw))[0]?.status.result, 'pass');
});
