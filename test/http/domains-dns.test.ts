import { Writable } from 'node:stream';
import t from 'tap';
import { printHistory } from '../../cli/history.ts';
import { dkimSecretId } from '../../commands/domains/handlers.ts';
import { serve } from '../../system.ts';
import { addDomain, publish, startDomainsApp, statuses } from '../support/domains.ts';
import { eventually, startReceiver } from '../support/receiver.ts';

/** Domains against a real DNS server on loopback: verification, re-checks, DKIM keys, webhooks, the schedule. */
const app = await startDomainsApp(t);

t.test('verify against DNS: found, missing, a wrong value, SERVFAIL and silence', async (t) => {
  const { h, dns } = app;
  const ws = await h.workspace();
  const d = await addDomain(h, ws.apiKey, 'verify.com');
  const verify = async () => {
    const res = await h.request(ws.apiKey, 'POST', `/domains/${d.id}/verify`);
    t.equal(res.statusCode, 200);
    return res.json();
  };

  publish(dns, d.records);
  const verified = await verify();
  t.same(statuses(verified), ['receiving found', 'spf found', 'dkim found', 'dmarc found', 'return_path found']);
  t.match(verified, {
    receiving: { verified: true, error: null },
    sending: { status: 'verified', canSend: true, error: null },
    dmarc: { stage: 'monitoring', alignmentPossible: true, issues: [{ code: 'monitoring_only' }] },
  });
  t.equal(verified.receiving.verifiedAt, verified.receiving.lastCheckedAt);
  const n = dns.queries.length;
  await h.request(ws.apiKey, 'GET', `/domains/${d.id}`);
  t.equal(dns.queries.length, n, 'a verified domain is not re-checked by reads');

  // Another provider's values: missing with the reason, and sending failed.
  dns.set('verify.com', {
    MX: [{ exchange: 'aspmx.l.google.com', priority: 1 }],
    TXT: ['v=spf1 include:_spf.google.com ~all'],
  });
  dns.set('bounces.verify.com', { CNAME: 'bounces.google.test' });
  const wrong = await verify();
  t.same(statuses(wrong), ['receiving missing', 'spf missing', 'dkim found', 'dmarc found', 'return_path missing']);
  t.match(wrong, {
    receiving: { verified: false, verifiedAt: null, error: /aspmx.l.google.com/ },
    sending: { status: 'failed', canSend: false, error: /does not include spf.mail.test/ },
  });

  // SERVFAIL: unchecked, sending unknown; a domain that was verified may still send.
  publish(dns, d.records);
  const dkimName = d.records.find((r: { purpose: string }) => r.purpose === 'dkim').name;
  dns.misbehave(dkimName, { kind: 'servfail' });
  const failing = await verify();
  t.same(statuses(failing), ['receiving found', 'spf found', 'dkim null', 'dmarc found', 'return_path found']);
  t.match(failing.sending, { status: 'unknown', canSend: true, error: /failed \(servfail\)/ });

  // Silence: the lookup times out (1 s here), and the answer comes all the same.
  dns.set(dkimName, { TXT: [] });
  dns.misbehave(dkimName, { kind: 'silent' });
  dns.misbehave('_dmarc.verify.com', { kind: 'silent' });
  const started = Date.now();
  const silent = await verify();
  // Bounded by the 1 s deadline plus the append and read-model wait, which take seconds on a loaded
  // machine; without the deadline c-ares would wait out its own retries on both names.
  t.ok(Date.now() - started < 10_000, `answered after ${Date.now() - started} ms`);
  t.same(statuses(silent), ['receiving found', 'spf found', 'dkim null', 'dmarc null', 'return_path found']);
  t.match(silent, { sending: { status: 'unknown', error: /failed \(timeout\)/ }, dmarc: null });
});

t.test('a never-verified domain under an unknown verdict cannot send; reads re-check after 20 s', async (t) => {
  const { h, dns } = app;
  const ws = await h.workspace();
  const d = await addDomain(h, ws.apiKey, 'unknown.com');
  for (const r of d.records) dns.misbehave(r.name, { kind: 'servfail' });
  const read = (await h.request(ws.apiKey, 'GET', `/domains/${d.id}`)).json();
  t.match(read.sending, { status: 'unknown', canSend: false });
  t.ok(statuses(read).every((s) => s.endsWith('null')));
  // Twenty seconds later (the check's time moved back in the read model, as time passing would).
  await h.system.database.pool.query(
    `UPDATE domains SET last_checked_at = now() - interval '21 seconds' WHERE id = $1`,
    [d.id],
  );
  const n = dns.queries.length;
  await h.request(ws.apiKey, 'GET', `/domains/${d.id}`);
  t.ok(dns.queries.length > n, 'checked again');
});

t.test('DKIM: rotation waits for its record; the private key is never read back, logged or in history', async (t) => {
  const { h, dns } = app;
  const ws = await h.workspace();
  const lines: string[] = [];
  const logged = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  const logging = await serve(h.system, { logger: { level: 'trace', stream: logged } });
  t.teardown(() => logging.close());
  const call = async (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) => {
    const res = await logging.inject({ method, url, payload, headers: { authorization: `Bearer ${ws.apiKey}` } });
    bodies.push(res.body);
    return res.json();
  };
  const bodies: string[] = [];

  const d = await call('POST', '/domains', { domain: 'dkim.com' });
  const [row] = (await h.system.database.pool.query('SELECT * FROM domains WHERE id = $1', [d.id])).rows;
  const first = await h.system.domains.secrets.get(dkimSecretId(d.id, row.dkim_key_id));
  t.match(first, /^-----BEGIN PRIVATE KEY-----\n/, 'the private key is in the vault');
  publish(dns, d.records);
  t.match((await call('POST', `/domains/${d.id}/verify`)).sending, { status: 'verified' });

  const rotated = await call('POST', `/domains/${d.id}/dkim/rotate`);
  const oldRecord = d.records.find((r: { purpose: string }) => r.purpose === 'dkim');
  const newRecord = rotated.records.find((r: { purpose: string }) => r.purpose === 'dkim');
  t.match(newRecord.name, /^wms\d{6}-2\._domainkey\.dkim\.com$/);
  t.not(newRecord.value, oldRecord.value);
  t.same(newRecord.status, null, 'the new record is not checked yet');
  const waiting = await call('POST', `/domains/${d.id}/verify`);
  t.match(waiting, { sending: { status: 'verified', canSend: true } }, 'the old key signs until the new record is out');
  t.equal(waiting.records.find((r: { purpose: string }) => r.purpose === 'dkim').status, 'missing');
  let [current] = (await h.system.database.pool.query('SELECT * FROM domains WHERE id = $1', [d.id])).rows;
  t.same([current.dkim_key_id, current.pending_dkim_key_id !== null], [row.dkim_key_id, true]);

  publish(dns, [newRecord]);
  const switched = await call('POST', `/domains/${d.id}/verify`);
  t.match(switched.sending, { status: 'verified' });
  [current] = (await h.system.database.pool.query('SELECT * FROM domains WHERE id = $1', [d.id])).rows;
  t.same(
    [current.dkim_selector, current.pending_dkim_key_id],
    [newRecord.name.split('.')[0], null],
    'the new key signs',
  );
  t.equal(
    await h.system.domains.secrets.get(dkimSecretId(d.id, row.dkim_key_id)),
    undefined,
    'the old key is destroyed',
  );
  const second = await h.system.domains.secrets.get(dkimSecretId(d.id, current.dkim_key_id));
  t.match(second, /PRIVATE KEY/);

  await call('GET', `/domains/${d.id}`);
  await call('GET', '/domains');
  await call('PATCH', `/domains/${d.id}`, { catchAll: true });
  const history: string[] = [];
  await printHistory(h.system, { workspaceId: ws.workspaceId }, (line) => history.push(line));
  t.ok(
    history.some((l) => l.includes('DomainDkimKeyActivated')),
    'the history shows the rotation',
  );
  const { rows: stored } = await h.system.database.pool.query('SELECT data::text FROM es_events');
  const everything = [...bodies, ...lines, ...history, ...stored.map((r) => r.data)].join('\n');
  t.ok(lines.length > 0, 'the requests were logged');
  for (const pem of [first!, second!]) {
    const body = pem.split('\n')[1]!;
    t.notOk(everything.includes(body), 'no answer, log line, history line or stored event holds the private key');
  }
  t.notOk(/PRIVATE KEY/.test(everything));

  await call('DELETE', `/domains/${d.id}`);
  t.equal(
    await h.system.domains.secrets.get(dkimSecretId(d.id, current.dkim_key_id)),
    undefined,
    'deleting destroys the keys',
  );
});

t.test('domain.* webhook events: verified, failed, deleted, narrowed by domain allowlists', async (t) => {
  const receiver = await startReceiver(t);
  const { h, dns } = await startDomainsApp(t, { webhooks: { allowPrivate: true, pollMs: 20 } });
  const ws = await h.workspace();
  const hook = async (body: object) =>
    (await h.request(ws.apiKey, 'POST', '/webhooks', { url: receiver.url, ...body })).json();
  await hook({ eventTypes: ['domain.*'] });
  await hook({ eventTypes: ['domain.*'], domainAllowlist: ['other.com'] });
  await hook({});
  const d = await addDomain(h, ws.apiKey, 'example.com');
  publish(dns, d.records);
  await h.request(ws.apiKey, 'POST', `/domains/${d.id}/verify`);
  await h.request(ws.apiKey, 'POST', `/domains/${d.id}/verify`);
  const dkimName = d.records.find((r: { purpose: string }) => r.purpose === 'dkim').name;
  dns.set(dkimName, { TXT: ['v=DKIM1; k=rsa; p=SOMEONEELSE'] });
  await h.request(ws.apiKey, 'POST', `/domains/${d.id}/verify`);
  await h.request(ws.apiKey, 'DELETE', `/domains/${d.id}`);
  await receiver.waitFor(3);
  await new Promise((r) => setTimeout(r, 300));
  const got = receiver.received.map((r) => JSON.parse(r.body));
  t.same(
    got.map((e) => e.type),
    ['domain.verified', 'domain.failed', 'domain.deleted'],
    'once each, to the one endpoint that hears them',
  );
  t.match(got[0].data, { id: d.id, domain: 'example.com', receiving: true, sending: true });
  t.match(got[1].data, { id: d.id, domain: 'example.com', error: /another key/ });
  t.match(got[2].data, { id: d.id, domain: 'example.com' });
});

t.test('the background re-check: often while a domain is set up, rarely once settled, as the system', async (t) => {
  const { h, dns } = await startDomainsApp(t, { domainChecks: { pollMs: 50, soonMs: 300, settledMs: 3_600_000 } });
  const ws = await h.workspace();
  const setUp = await addDomain(h, ws.apiKey, 'setup.com');
  const done = await addDomain(h, ws.apiKey, 'done.com');
  publish(dns, done.records);
  const checksOf = async (id: string) =>
    (await h.system.store.readStream(`ws-${ws.workspaceId}.domain-${id}`)).filter((e) => e.type === 'DomainChecked');
  const seen = await eventually(
    async () => ((await checksOf(setUp.id)).length >= 3 ? checksOf(setUp.id) : null),
    20_000,
  );
  t.ok(
    seen.every((e) => e.data.trigger === 'schedule' && (e.metadata.actor as { kind: string }).kind === 'system'),
    'checked by the schedule, as the system',
  );
  const settled = await eventually(async () => {
    const checks = await checksOf(done.id);
    return (checks.at(-1)?.data.sending as { status: string } | undefined)?.status === 'verified' ? checks : null;
  });
  // Three more checks of the one being set up, soonMs apart: time for two of the settled one on
  // the short interval, and none come.
  const soFar = (await checksOf(setUp.id)).length;
  await eventually(async () => (await checksOf(setUp.id)).length >= soFar + 3, 20_000);
  t.pass('the one being set up goes on being checked');
  t.equal((await checksOf(done.id)).length, settled.length, 'a settled domain waits for the long interval');
  await h.request(ws.apiKey, 'DELETE', `/domains/${setUp.id}`);
  const { rows } = await h.system.database.pool.query('SELECT domain_id FROM domain_check_schedule');
  t.same(rows, [{ domain_id: done.id }], 'a deleted domain leaves the schedule');
});
