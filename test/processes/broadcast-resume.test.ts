import { mkdtemp, rm, chmod } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { ensureDefaultAudience } from '../../commands/audiences/handlers.ts';
import { newId } from '../../commands/ids.ts';
import { contactStream } from '../../domain/contacts/events.ts';
import { broadcastTemplate, settledBroadcast } from '../support/broadcasts.ts';
import { addDomain, HOSTS, publish, startDomainsApp } from '../support/domains.ts';
import { sharedFreePort, startMxServer } from '../support/mx-server.ts';
import { eventually } from '../support/receiver.ts';
import { forkService } from '../support/fork-service.ts';

/**
 * Six pages of 100: the kill lands in the third, with pages sent before it and left after it. Each
 * contact costs the run about 50 ms on the shared two cores; what a broadcast does at scale is
 * bench/broadcasts.ts's to measure.
 */
const CONTACTS = 600;

t.test(
  `a broadcast to ${CONTACTS} contacts, killed mid-way and resumed by another process: each contact mailed once`,
  async (t) => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'wms-broadcast-'));
    await chmod(dataDir, 0o755);
    t.teardown(() => rm(dataDir, { recursive: true, force: true }));
    const port = await sharedFreePort(['127.0.0.1']);
    const mx = await startMxServer(t, '127.0.0.1', port);
    const outbound = { mxPort: port, mxAllowPrivate: true, heloName: 'mta.mail.test' };
    // This process only sets up and reads: it sends nothing.
    const { h, dns } = await startDomainsApp(t, { deliver: false, dataDir, outbound, poolSize: 8 });
    dns.set('dest.test', { MX: [{ exchange: 'mx.dest.test', priority: 10 }] });
    dns.set('mx.dest.test', { A: ['127.0.0.1'] });
    dns.set(HOSTS.mx, { A: ['127.0.0.1'] });

    const ws = await h.workspace();
    const domain = await addDomain(h, ws.apiKey, 'crash.example.com');
    publish(dns, domain.records);
    t.equal((await h.request(ws.apiKey, 'POST', `/domains/${domain.id}/verify`)).json().receiving?.verified, true);
    t.equal((await h.request(ws.apiKey, 'POST', '/addresses', { address: 'news@crash.example.com' })).statusCode, 201);
    const tpl = await broadcastTemplate(h, ws.apiKey, 'Crash Letter');
    const audience = (await h.request(ws.apiKey, 'POST', '/audiences', { name: 'Everyone' })).json();
    const actor = { workspaceId: ws.workspaceId, kind: 'system' as const, id: null };
    const { defaultId } = await ensureDefaultAudience(h.system.commands, actor, new Date().toISOString());
    const began = Date.now();
    // The contacts' own events, appended without the commands' per-write wait for the read models
    // (a command per contact took minutes on the shared machine); the projector makes the book.
    let position = 0;
    const addresses = Array.from({ length: CONTACTS }, (_, i) => `user${i}@dest.test`);
    for (let i = 0; i < addresses.length; i += 50)
      await Promise.all(
        addresses.slice(i, i + 50).map(async (email) => {
          const appended = await h.system.store.append(
            contactStream(ws.workspaceId, email),
            [
              {
                ...h.system.commands.registry.encode({
                  type: 'ContactCreated',
                  data: {
                    contactId: newId.contact(),
                    email,
                    name: `User ${email}`,
                    notes: null,
                    attributes: { plan: 'pro' },
                    source: 'manual',
                    audienceIds: [defaultId!, audience.id],
                    createdAt: new Date().toISOString(),
                  },
                }),
                metadata: { workspaceId: ws.workspaceId, actor: { kind: 'system', id: null }, requestId: null },
              },
            ],
            'no_stream',
          );
          position = Math.max(position, appended.position);
        }),
      );
    await h.system.runner.waitFor(position, ['ContactCreated'], { onDeadline: () => true });
    t.comment(`${CONTACTS} contacts made in ${Date.now() - began} ms`);
    const options = {
      dataDir,
      poolSize: 12,
      dns: { servers: [dns.address], timeoutMs: 1000 },
      mailHosts: HOSTS,
      domainChecks: { pollMs: 3_600_000 },
      outbound,
      broadcasts: { pollMs: 20, pageSize: 100 },
      emailDelivery: { pollMs: 20 },
    };
    const first = forkService(h.url, options);
    t.teardown(() => void first.child.kill('SIGKILL'));
    await first.ready;
    const created = await h.request(ws.apiKey, 'POST', '/broadcasts', {
      from: 'news@crash.example.com',
      templateId: tpl.id,
      audienceIds: [audience.id],
    });
    t.equal(created.statusCode, 201, created.body);
    const id = created.json().id;
    const pool = h.system.database.pool;
    const count = async (sql: string) => Number((await pool.query(sql, [id])).rows[0].n);
    const markedSent = () =>
      count('SELECT count(*) AS n FROM broadcast_recipients WHERE broadcast_id = $1 AND sent_at IS NOT NULL');
    const accepted = () =>
      count("SELECT count(*) AS n FROM es_events WHERE type = 'EmailAccepted' AND data->>'broadcastId' = $1");
    // Killed when a third is accepted, in the middle of a page (pages of 100): some of its
    // recipients have their email and are not yet marked sent.
    await eventually(async () => (await accepted()) >= CONTACTS / 3 + 50, 200_000);
    first.child.kill('SIGKILL');
    await new Promise((r) => first.child.once('exit', r));
    const marked = await markedSent();
    const acceptedAtKill = await accepted();
    t.comment(`killed ${Date.now() - began} ms in`);
    t.ok(marked < acceptedAtKill, `killed mid-page: ${acceptedAtKill} accepted, ${marked} of them marked sent`);

    const second = forkService(h.url, options);
    t.teardown(() => void second.child.kill('SIGKILL'));
    await second.ready;
    const done = await settledBroadcast(h, ws.apiKey, id, 240_000);
    t.comment(`completed and delivered ${Date.now() - began} ms in`);
    t.match(done.progress, { recipients: CONTACTS, sent: CONTACTS, failed: 0, delivered: CONTACTS, bounced: 0 });

    const emails = await pool.query<{ streams: string; events: string }>(
      `SELECT count(DISTINCT stream_id) AS streams, count(*) AS events FROM es_events
       WHERE type = 'EmailAccepted' AND data->>'broadcastId' = $1`,
      [id],
    );
    t.same(emails.rows[0], { streams: String(CONTACTS), events: String(CONTACTS) }, 'one email per contact');
    const messageIds = new Map<string, Set<string>>();
    for (const r of mx.received) {
      const messageId = /^Message-ID:\s*(\S+)/im.exec(r.raw.toString())?.[1] ?? '';
      for (const to of r.rcptTo) messageIds.set(to, (messageIds.get(to) ?? new Set()).add(messageId));
    }
    t.equal(messageIds.size, CONTACTS, 'every contact reached the MX');
    t.equal([...messageIds.values()].filter((s) => s.size > 1).length, 0, 'no contact got two different messages');
    t.comment(
      `hand-overs: ${mx.received.length} for ${CONTACTS} recipients (an SMTP hand-over cut by the kill may repeat the same message)`,
    );
  },
);
