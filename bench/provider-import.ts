/**
 * A provider import of PROVIDER_IMPORT_CONTACTS contacts (default 100,000) and
 * PROVIDER_IMPORT_SUPPRESSIONS suppressions (default 10,000) from the loopback Brevo of the tests,
 * in a process of its own (bench/provider-server.ts, seeded in memory), through the real path:
 * `POST /provider-imports` to the service in its own process (bench/server.ts), then the process
 * manager paging Brevo and writing each page. Brevo is the one of the five with both resources
 * behind plain offset paging of large pages (contacts 1,000, blocked addresses 100 a request, the
 * adapter's sizes); its three lists come along, so contacts join the audiences they became.
 *
 * Twice: against a loopback Brevo that answers as fast as it can (`paced: false`: how fast our
 * writes go), then against one held to Brevo's documented rate limits (`paced: true`: 10 requests
 * a second for contacts, 1,000 for blocked addresses, 429 past them), the pace a real import
 * meets. Each time:
 *
 *   provider-import.floor   the same pages read through the same adapter (infra/providers/brevo.ts)
 *                           by a plain loop in this process, nothing written, waiting as a 429
 *                           says: rows/s. The import is bound by the provider's paging when it
 *                           comes near this.
 *   provider-import.run     from the import's start to completed (its startedAt and finishedAt):
 *                           rows/s (every source row: audiences, contacts, unsubscribed ones
 *                           included, suppressions), the ratio to the floor, the server's RSS
 *                           (sampled every 100 ms) before, at its peak and after, its CPU.
 */
import { fork } from 'node:child_process';
import { rm } from 'node:fs/promises';
import pg from 'pg';
import type { ImportResource } from '../domain/provider-imports/providers.ts';
import { ProviderError } from '../infra/providers/port.ts';
import { openProviderConnector } from '../infra/providers/select.ts';
import { BREVO_KEYS } from '../test/support/providers/brevo.ts';
import { TEST_SECRETS_KEY } from '../test/support/secrets.ts';
import { besideBench, emit, freshDatabase, msSince, note, RssSampler, round, startServer } from './support.ts';

const CONTACTS = Number(process.env.PROVIDER_IMPORT_CONTACTS ?? 100_000);
const SUPPRESSIONS = Number(process.env.PROVIDER_IMPORT_SUPPRESSIONS ?? 10_000);
const RESOURCES: ImportResource[] = ['suppressions', 'audiences', 'contacts'];
/** brevoData's lists. */
const LISTS = 3;
const ROWS = CONTACTS + SUPPRESSIONS + LISTS;
/** The goal holds at the provider's real pace; the unlimited loopback only shows how fast our writes go. */
const TARGET = {
  paced: 'rows/s >= 0.8 x the floor (bound by the paging)',
  unlimited: 'none: our writes alone, with nothing to wait for',
};

export async function providerImportBench(): Promise<void> {
  for (const paced of [false, true]) {
    const provider = await startProvider(paced);
    try {
      const floor = await pageAlone(provider.url, provider.pid, paced);
      await emit({ bench: 'provider-import.floor', provider: 'brevo', paced, ...floor });
      await importOnce(provider.url, floor.rowsPerSec, paced);
    } finally {
      await provider.close();
    }
  }
}

async function startProvider(paced: boolean): Promise<{ url: string; pid: number; close(): Promise<void> }> {
  note(
    `provider-import: seeding a loopback Brevo${paced ? ' at its documented rate limits' : ''} with ${CONTACTS} contacts and ${SUPPRESSIONS} blocked addresses`,
  );
  const args = [String(CONTACTS), String(SUPPRESSIONS), ...(paced ? ['paced'] : [])];
  const child = fork(besideBench('provider-server'), args, { stdio: ['ignore', 2, 2, 'ipc'] });
  const { url } = await new Promise<{ url: string }>((resolve, reject) => {
    child.once('message', (m: { url: string }) => resolve(m));
    child.once('exit', (code) => reject(new Error(`the loopback Brevo exited (${code}) before it listened`)));
  });
  return {
    url,
    pid: child.pid!,
    close: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.send('close');
      await exited;
    },
  };
}

/**
 * Every page of the resources, one after another as the import asks for them, through our adapter
 * alone; a page refused with a 429 is asked again after the wait it names, as the import does.
 */
async function pageAlone(url: string, providerPid: number, paced: boolean) {
  note(`provider-import: the floor, paging alone${paced ? ' at the documented rate limits' : ''}`);
  const connector = openProviderConnector({ baseUrls: { brevo: url }, allowPrivate: true });
  const rss = new RssSampler(providerPid).start();
  try {
    const client = connector.connect('brevo', BREVO_KEYS.api);
    const started = process.hrtime.bigint();
    let rows = 0;
    let pages = 0;
    let refused = 0;
    for (const resource of RESOURCES) {
      let cursor: string | null = null;
      do {
        try {
          const page = await client.page(resource, cursor);
          rows += page.items.length;
          pages++;
          cursor = page.next;
        } catch (error) {
          if (!(error instanceof ProviderError) || error.kind !== 'rate_limited') throw error;
          refused++;
          await new Promise((r) => setTimeout(r, error.retryAfterMs ?? 1000));
        }
      } while (cursor !== null);
    }
    const seconds = msSince(started) / 1000;
    if (rows !== ROWS) throw new Error(`the floor read ${rows} of ${ROWS} rows`);
    return {
      contacts: CONTACTS,
      suppressions: SUPPRESSIONS,
      rows,
      pages,
      refused,
      seconds: round(seconds, 2),
      rowsPerSec: round(rows / seconds),
      providerRssPeakMb: rss.stop().rssPeakMb,
    };
  } finally {
    connector.close();
  }
}

interface ImportView {
  id: string;
  status: string;
  report: {
    suppressions: { imported: number; existing: number; failed: number };
    audiences: { imported: number; existing: number; failed: number };
    contacts: { imported: number; existing: number; failed: number; unsubscribed: number };
    errors: unknown[];
  } | null;
  lastError: string | null;
  startedAt: string | null;
  finishedAt: string | null;
}

async function importOnce(url: string, floorRowsPerSec: number, paced: boolean): Promise<void> {
  const database = await freshDatabase('provider_import');
  const server = await startServer(database.url, 1, {
    secretsKey: TEST_SECRETS_KEY,
    dataDir: `/tmp/${database.name}`,
    providerImports: { baseUrls: { brevo: url }, allowPrivate: true },
  }).catch(async (error) => {
    await database.drop();
    throw error;
  });
  const db = new pg.Client({ connectionString: database.url });
  try {
    await db.connect();
    const { workspaceId, apiKey } = server.workspaces[0]!;
    const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
    const rss = new RssSampler(server.pid).start();
    const cpuBefore = await server.cpuSeconds();
    note(`provider-import: importing ${ROWS} rows${paced ? ' at the documented rate limits' : ''}`);
    const res = await fetch(`${server.baseUrl}/provider-imports`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ provider: 'brevo', apiKey: BREVO_KEYS.api, resources: RESOURCES }),
    });
    let view = (await res.json()) as ImportView;
    if (res.status !== 201) throw new Error(`POST /provider-imports answered ${res.status}: ${JSON.stringify(view)}`);
    const id = view.id;
    let lastNote = Date.now();
    while (!['completed', 'failed', 'cancelled'].includes(view.status)) {
      await new Promise((r) => setTimeout(r, 500));
      const got = await fetch(`${server.baseUrl}/provider-imports/${id}`, { headers });
      if (got.status !== 200) throw new Error(`GET /provider-imports/{id} answered ${got.status}: ${await got.text()}`);
      view = (await got.json()) as ImportView;
      if (Date.now() - lastNote > 15_000) {
        lastNote = Date.now();
        // The view's report moves per resource; the run's row holds it per page.
        const { rows } = await db.query('SELECT stage, report FROM provider_import_runs WHERE id = $1', [id]);
        const r = rows[0]?.report;
        note(
          `provider-import: stage ${rows[0]?.stage}, suppressions ${JSON.stringify(r?.suppressions)}, contacts ${JSON.stringify(r?.contacts)}`,
        );
      }
    }
    const cpuSeconds = (await server.cpuSeconds()) - cpuBefore;
    const memory = rss.stop();
    if (view.status !== 'completed') throw new Error(`the import ended ${view.status}: ${view.lastError}`);
    const report = view.report!;
    const unsubscribed = report.contacts.unsubscribed;
    if (
      report.suppressions.imported !== SUPPRESSIONS ||
      report.audiences.imported !== LISTS ||
      report.contacts.imported + unsubscribed !== CONTACTS ||
      report.errors.length > 0
    )
      throw new Error(`the import reported ${JSON.stringify(report)}`);
    const stored = await db.query<{ contacts: string; suppressions: string }>(
      `SELECT (SELECT count(*) FROM contacts WHERE workspace_id = $1) AS contacts,
              (SELECT count(*) FROM suppressions WHERE workspace_id = $1) AS suppressions`,
      [workspaceId],
    );
    if (
      Number(stored.rows[0]!.contacts) !== report.contacts.imported ||
      Number(stored.rows[0]!.suppressions) !== SUPPRESSIONS
    )
      throw new Error(`the read models hold ${JSON.stringify(stored.rows[0])} after ${JSON.stringify(report)}`);
    const seconds = (Date.parse(view.finishedAt!) - Date.parse(view.startedAt!)) / 1000;
    const rowsPerSec = round(ROWS / seconds);
    await emit({
      bench: 'provider-import.run',
      provider: 'brevo',
      paced,
      contacts: CONTACTS,
      suppressions: SUPPRESSIONS,
      rows: ROWS,
      imported: report.contacts.imported + report.suppressions.imported + report.audiences.imported,
      unsubscribed,
      seconds: round(seconds, 2),
      rowsPerSec,
      floorRowsPerSec,
      ratio: round(rowsPerSec / floorRowsPerSec, 3),
      serverCpuShare: round(cpuSeconds / seconds, 2),
      ...memory,
      target: paced ? TARGET.paced : TARGET.unlimited,
    });
  } finally {
    await db.end().catch(() => {});
    await server.close();
    await database.drop();
    await rm(`/tmp/${database.name}`, { recursive: true, force: true });
  }
}
