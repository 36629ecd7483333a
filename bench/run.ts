/**
 * `npm run bench [-- name ...]`: runs the benchmarks in order (or only those named), each on a
 * fresh database it drops afterwards, and prints one JSON line per figure on stdout (progress goes
 * to stderr). Figures only: nothing here asserts a time.
 *
 *   eventstore          50,000 single-event appends, 32 writers: ours vs emmett-postgresql
 *                       (and ours again with one append in 1,000 refused by PostgreSQL)
 *   http-suppressions   POST /suppressions over HTTP with autocannon, 64 connections, 20 s
 *   http-floors         GET and POST /suppressions and POST /emails, 64 connections, beside bench/floor-server.ts (bare Fastify + pg):
 *                       ours, the floor and the ratio, alternating rounds (BENCH_BASELINE: a build before, too)
 *   suppressions-list   GET /suppressions paging and search over 1,000,000 rows (seeded in SQL)
 *   rebuild             online rebuild of the suppressions read model from those events, beside COPY into an unindexed table
 *   template-render     render of a 100-block published template with props (cold and cached)
 *   templates-list      GET /templates lists and searches, 200 templates in each of 1,000 workspaces
 *   webhooks            10,000 events fanned out to 5 endpoints: deliveries/s, event-to-delivery latency
 *   contact-events      POST /events/batch of 100 events over HTTP for 15 s: events/s stored, request p50/p99
 *   contacts            GET /contacts `q` searches and GET /audiences/growth over 1,000,000 contacts (read model seeded in SQL)
 *   outbound            20,000 messages composed, DKIM-signed and delivered to a loopback MX: ours vs nodemailer alone
 *   emails-deliver      20,000 accepted messages through the delivery process manager to a loopback MX (DKIM,
 *                       direct delivery): messages/s, RSS over the run, event→250 p50/p99; nodemailer alone as the floor
 *   inbound             5,000 signed messages over SMTP: a discarding smtp-server, our listener into the blob
 *                       store, the same with authentication, parsing, threading and the spam verdict, and
 *                       the receiving slice as the server runs it (filed in threads on PostgreSQL)
 *   threads-list        GET /threads pages and searches over 1,000,000 messages of one workspace (events seeded in
 *                       SQL, filed by the threads projector)
 *   domains             1,000 domains verified against a loopback DNS server (one answering late), GET /domains pages
 *   addresses-list      GET /addresses and GET /domains/{id}/addresses over 100,000 addresses of one workspace (read model seeded in SQL)
 *   emails-accept       POST /emails/batch of 100 messages (messages/s) and single POST /emails at 32 connections (p50/p99)
 *
 *   broadcasts          a broadcast to 100,000 contacts (BROADCAST_RECIPIENTS) through sendEmail and delivery to a
 *                       loopback MX: recipients/s from the create to the last 250, RSS, p50/p99 of a GET meanwhile
 *
 *   mailbox-import      a generated mbox (MAILBOX_IMPORT_BYTES, default 2G; `200M,1G` runs each), bare and in a tgz
 *                       (MAILBOX_IMPORT_FORMATS), through POST /imports/upload and the import process: MB/s, messages/s,
 *                       the server's RSS peak; mailparser and mailsplit alone as the floor
 *   export              an export of 100,000 messages with attachments (EXPORT_MESSAGES; events seeded in SQL, raw
 *                       messages in the blob store): MB/s of zip, seconds, the server's RSS peak; beside it yazl and
 *                       archiver writing the same entries to a sink (ZIP_SMALL_ENTRIES, ZIP_LARGE_ENTRIES; EXPORT_PARTS)
 *
 *   provider-import     an import of 100,000 contacts and 10,000 suppressions (PROVIDER_IMPORT_CONTACTS,
 *                       PROVIDER_IMPORT_SUPPRESSIONS) from a loopback Brevo in its own process, unlimited and then
 *                       held to Brevo's documented rate limits: rows/s from start to completed, the server's RSS
 *                       peak; the same pages read by the adapter alone as the floor
 *
 *   oauth-tokens        GET /suppressions with 600 OAuth access tokens against 600 API keys, 64 connections, alternating
 *                       rounds (tokens made through sign-in, consent with PKCE and the code exchange); refreshes/s
 *                       (rotating, 16 chains) and code exchanges/s
 *
 *   contention          concurrent creates of templates and audiences in one workspace (one registry stream), 1 and 3 systems
 *
 *   task-schedule       the task scheduler over 10,000 active hourly tasks (TASK_SCHEDULE_TASKS): ticks, CPU ms and
 *                       query ms per clock minute and per tick, then the same minutes with nothing due
 *   task-steps          the tasks' assistant against a loopback model server answering at once with tool calls:
 *                       our overhead per step (model answer to our next request) p50/p99 and steps/s, serially
 *                       and runs at once (TASK_STEPS_RUNS runs of TASK_STEPS_TURNS turns); the bare HTTP round
 *                       trip to the same server as the floor, and the ratio
 *
 * `rebuild` reuses the database `suppressions-list` seeded when both run; alone, it seeds its own.
 */
import { addressesListBench } from './addresses-list.ts';
import { broadcastsBench } from './broadcasts.ts';
import { contactsBench } from './contacts.ts';
import { contentionBench } from './contention.ts';
import { domainsBench } from './domains.ts';
import { emailsAcceptBench } from './emails-accept.ts';
import { eventstoreBench } from './eventstore.ts';
import { httpFloorsBench } from './http-floors.ts';
import { httpSuppressionsBench } from './http-suppressions.ts';
import { rebuildBench } from './rebuild.ts';
import { dropAllDatabases, emit, machine, note, round } from './support.ts';
import { suppressionsListBench, type Seeded } from './suppressions-list.ts';
import { templateRenderBench } from './template-render.ts';
import { templatesListBench } from './templates-list.ts';
import { webhooksBench } from './webhooks.ts';
import { contactEventsBench } from './contact-events.ts';
import { outboundBench } from './outbound.ts';
import { emailsDeliverBench } from './emails-deliver.ts';
import { threadsListBench } from './threads-list.ts';
import { inboundBench } from './inbound.ts';
import { mailboxImportBench } from './mailbox-import.ts';
import { exportBench } from './export.ts';
import { oauthTokensBench } from './oauth-tokens.ts';
import { providerImportBench } from './provider-import.ts';
import { taskScheduleBench } from './task-schedule.ts';
import { taskStepsBench } from './task-steps.ts';

const ORDER = [
  'eventstore',
  'http-suppressions',
  'http-floors',
  'suppressions-list',
  'rebuild',
  'template-render',
  'templates-list',
  'webhooks',
  'contacts',
  'contact-events',
  'outbound',
  'emails-deliver',
  'inbound',
  'threads-list',
  'domains',
  'addresses-list',
  'emails-accept',
  'broadcasts',
  'mailbox-import',
  'export',
  'provider-import',
  'oauth-tokens',
  'contention',
  'task-schedule',
  'task-steps',
] as const;
type Name = (typeof ORDER)[number];

async function main(argv: string[]): Promise<number> {
  const unknown = argv.filter((a) => !(ORDER as readonly string[]).includes(a));
  if (unknown.length > 0) {
    console.error(`unknown benchmark ${unknown.join(', ')}; known: ${ORDER.join(', ')}`);
    return 2;
  }
  const selected = ORDER.filter((name) => argv.length === 0 || argv.includes(name));
  note(`machine ${JSON.stringify(await machine())}; running ${selected.join(', ')}`);
  let seeded: Seeded | null = null;
  let failed = 0;
  const started = Date.now();
  for (const name of selected) {
    const t0 = Date.now();
    try {
      await run(name);
    } catch (error) {
      failed++;
      await emit({ bench: name, error: String((error as Error)?.stack ?? error) });
    }
    note(`${name} took ${round((Date.now() - t0) / 1000)} s`);
  }
  note(`all done in ${round((Date.now() - started) / 1000)} s`);
  return failed > 0 ? 1 : 0;

  async function run(name: Name): Promise<void> {
    switch (name) {
      case 'eventstore':
        return eventstoreBench();
      case 'http-suppressions':
        return httpSuppressionsBench();
      case 'http-floors':
        return httpFloorsBench();
      case 'suppressions-list':
        seeded = await suppressionsListBench({ keep: selected.includes('rebuild') });
        return;
      case 'rebuild': {
        const s = seeded;
        seeded = null;
        return rebuildBench(s);
      }
      case 'template-render':
        return templateRenderBench();
      case 'templates-list':
        return templatesListBench();
      case 'webhooks':
        return webhooksBench();
      case 'contacts':
        return contactsBench();
      case 'contact-events':
        return contactEventsBench();
      case 'outbound':
        return outboundBench();
      case 'emails-deliver':
        return emailsDeliverBench();
      case 'inbound':
        return inboundBench();
      case 'threads-list':
        return threadsListBench();
      case 'domains':
        return domainsBench();
      case 'addresses-list':
        return addressesListBench();
      case 'broadcasts':
        return broadcastsBench();
      case 'emails-accept':
        return emailsAcceptBench();
      case 'mailbox-import':
        return mailboxImportBench();
      case 'export':
        return exportBench();
      case 'provider-import':
        return providerImportBench();
      case 'oauth-tokens':
        return oauthTokensBench();
      case 'contention':
        return contentionBench();
      case 'task-schedule':
        return taskScheduleBench();
      case 'task-steps':
        return taskStepsBench();
    }
  }
}

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping) process.exit(130);
    stopping = true;
    note(`${signal}: dropping the benchmark databases`);
    void dropAllDatabases().finally(() => process.exit(130));
  });
}

main(process.argv.slice(2)).then(
  async (code) => {
    await dropAllDatabases();
    process.exit(code);
  },
  async (error) => {
    console.error(error);
    await dropAllDatabases();
    process.exit(1);
  },
);
