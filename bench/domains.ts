import { startDnsServer, type ZoneEntry } from '../test/support/dns-server.ts';
import {
  concurrently,
  createKeys,
  emit,
  freshDatabase,
  msSince,
  note,
  round,
  Samples,
  startServer,
} from './support.ts';

const DOMAINS = 1000;
/** Verifies in flight at once. */
const CONCURRENCY = 16;
/**
 * Adds in flight at once: each spends ~0.3 s of CPU on its key in the server's thread pool, so
 * more than the cores only lengthens each add, and at 16 the projections fell past the 10 s
 * read-your-writes deadline on a loaded machine (503 `unreachable`).
 */
const ADD_CONCURRENCY = 4;
/** The one DKIM name that answers late, and how late: longer than any other check takes. */
const SLOW_MS = 1500;
const HOSTS = {
  mx: 'mx.bench.test',
  spfInclude: 'spf.bench.test',
  returnPath: 'bounces.bench.test',
  tracking: 'track.bench.test',
  storage: 'files.bench.test',
};

interface Domain {
  id: string;
  domain: string;
  records: { type: string; name: string; value: string; priority: number | null; status: string | null }[];
  sending: { status: string; error: string | null };
}

/**
 * Domains against the DNS server on loopback (test/support/dns-server.ts, in this process; the
 * service runs in its own): 1,000 domains added over HTTP, 4 at once (each makes its 2048-bit DKIM key),
 * their records published, then every one verified (POST /domains/{id}/verify, 16 at once) while
 * one domain's DKIM name answers 1.5 s late: throughput, p50/p99 of the others, and how many
 * checks finished while the slow one waited. Then GET /domains pages over the 1,000 at the
 * default and the largest page size. One workspace holds them all; 20 keys take turns, so the
 * 600-a-minute limit per key is not what is measured.
 */
export async function domainsBench(): Promise<void> {
  const database = await freshDatabase('domains');
  const dnsTeardown: (() => Promise<void> | void)[] = [];
  const dns = await startDnsServer({ teardown: (fn) => dnsTeardown.push(fn) });
  const server = await startServer(database.url, 1, {
    dns: { servers: [dns.address], timeoutMs: 5000 },
    mailHosts: HOSTS,
    // The background re-check stays out of the figures.
    domainChecks: { pollMs: 3_600_000 },
  });
  try {
    const owner = server.workspaces[0]!;
    const keys = [
      owner.apiKey,
      ...(await createKeys(server.baseUrl, owner.apiKey, 19, ['domains:read', 'domains:write'])),
    ];
    let turn = 0;
    let late = 0;
    /**
     * One request; a 503 (the read models behind the write on a loaded machine) is retried under
     * the same Idempotency-Key, which answers the stored result once they catch up: counted, not hidden.
     */
    const call = async <T>(method: string, path: string, body?: object): Promise<T> => {
      const idempotencyKey = method === 'POST' ? crypto.randomUUID() : null;
      // A key is bound to its credential: the retry goes with the same one.
      const key = keys[turn++ % keys.length];
      for (;;) {
        const res = await fetch(`${server.baseUrl}${path}`, {
          method,
          headers: {
            authorization: `Bearer ${key}`,
            ...(body ? { 'content-type': 'application/json' } : {}),
            ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
          },
          body: body ? JSON.stringify(body) : undefined,
        });
        const answer = (await res.json()) as T;
        if (res.status === 503 && idempotencyKey) {
          late++;
          continue;
        }
        if (res.status >= 300) throw new Error(`${method} ${path} answered ${res.status}: ${JSON.stringify(answer)}`);
        return answer;
      }
    };

    note(`domains: adding ${DOMAINS} domains (a DKIM key each)`);
    const added: Domain[] = [];
    const addSamples = new Samples(DOMAINS);
    const addStarted = process.hrtime.bigint();
    let next = 0;
    await concurrently(ADD_CONCURRENCY, async () => {
      for (let i = next++; i < DOMAINS; i = next++) {
        added.push(
          await addSamples.time(() => call<Domain>('POST', '/domains', { domain: `d${i}.bench-${i % 7}.com` })),
        );
      }
    });
    const addSeconds = msSince(addStarted) / 1000;
    const [addP50, addP99] = addSamples.percentiles();
    await emit({
      bench: 'domains.add',
      domains: DOMAINS,
      concurrency: ADD_CONCURRENCY,
      perSecond: round(DOMAINS / addSeconds, 1),
      p50Ms: addP50,
      p99Ms: addP99,
      retriedAfter503: late,
      note: 'each add makes a 2048-bit RSA key',
    });
    late = 0;

    const zone = new Map<string, ZoneEntry>();
    for (const d of added) {
      for (const r of d.records) {
        const entry = zone.get(r.name) ?? {};
        if (r.type === 'MX') entry.MX = [{ exchange: r.value, priority: r.priority! }];
        if (r.type === 'CNAME') entry.CNAME = r.value;
        if (r.type === 'TXT') entry.TXT = [...(entry.TXT ?? []), r.value.match(/.{1,255}/g)!];
        zone.set(r.name, entry);
      }
    }
    for (const [name, entry] of zone) dns.set(name, entry);
    const slow = added[DOMAINS / 2]!;
    dns.misbehave(slow.records.find((r) => r.type === 'TXT' && r.name.includes('._domainkey.'))!.name, {
      kind: 'slow',
      ms: SLOW_MS,
    });

    note(`domains: verifying ${DOMAINS} domains, ${CONCURRENCY} at once, one of them answering ${SLOW_MS} ms late`);
    const others = new Samples(DOMAINS);
    let slowMs = 0;
    let slowOutcome: Domain['sending'] | null = null;
    let slowStartedAt = 0;
    let slowEndedAt = 0;
    const finishedAt: number[] = [];
    let verified = 0;
    const verifyStarted = process.hrtime.bigint();
    next = 0;
    await concurrently(CONCURRENCY, async () => {
      for (let i = next++; i < DOMAINS; i = next++) {
        const d = added[i]!;
        const started = performance.now();
        const answer = await call<Domain>('POST', `/domains/${d.id}/verify`);
        const ended = performance.now();
        if (answer.sending.status === 'verified') verified++;
        if (d === slow) {
          slowMs = ended - started;
          slowOutcome = answer.sending;
          slowStartedAt = started;
          slowEndedAt = ended;
        } else {
          others.add(ended - started);
          finishedAt.push(ended);
        }
      }
    });
    const verifySeconds = msSince(verifyStarted) / 1000;
    const [p50, p99] = others.percentiles();
    await emit({
      bench: 'domains.verify',
      domains: DOMAINS,
      concurrency: CONCURRENCY,
      verified,
      perSecond: round(DOMAINS / verifySeconds, 1),
      p50Ms: p50,
      p99Ms: p99,
      lookupsPerCheck: 5,
      slowAnswerMs: SLOW_MS,
      slowCheckMs: round(slowMs),
      slowOutcome,
      retriedAfter503: late,
      finishedWhileSlowWaited: finishedAt.filter((at) => at > slowStartedAt && at < slowEndedAt).length,
    });

    note('domains: GET /domains pages, and GET /ping as the floor of any request here and now');
    const floor = new Samples(300);
    for (let i = 0; i < 300; i++) await floor.time(() => call('GET', '/ping'));
    const [fp50, fp99] = floor.percentiles();
    await emit({ bench: 'domains.list', kind: 'floor: GET /ping', requests: floor.length, p50Ms: fp50, p99Ms: fp99 });
    for (const limit of [25, 100]) {
      for (let i = 0; i < 20; i++) await call('GET', `/domains?limit=${limit}`);
      const first = new Samples(300);
      for (let i = 0; i < 300; i++) await first.time(() => call('GET', `/domains?limit=${limit}`));
      // A whole walk, page after page, repeated: deep pages cost what the first does.
      const deep = new Samples(300);
      while (deep.length < 300) {
        let cursor: string | null = null;
        do {
          const page: { nextCursor: string | null } = await deep.time(() =>
            call('GET', `/domains?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`),
          );
          cursor = page.nextCursor;
        } while (cursor && deep.length < 300);
      }
      for (const [kind, samples] of [
        ['first-page', first],
        ['walk', deep],
      ] as const) {
        const [lp50, lp99] = samples.percentiles();
        await emit({
          bench: 'domains.list',
          kind,
          limit,
          requests: samples.length,
          domains: DOMAINS,
          p50Ms: lp50,
          p99Ms: lp99,
          target: 'p99 < 10 ms',
        });
      }
    }
  } finally {
    await server.close();
    for (const fn of dnsTeardown) await fn();
    await database.drop();
  }
}
