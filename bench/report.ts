/**
 * `npm run bench:report -- <file> [--write docs/benchmarks.md] [--date YYYY-MM-DD]`: turns the JSON
 * lines `npm run bench` printed (other lines are skipped, so stderr may be mixed in) into one
 * markdown table for the run: figure, measured, target, peer or floor, ratio, 1-minute load. It
 * prints the section, or with `--write` puts it first under the runs of that document, so the
 * figures there are generated from the output, not written by hand. `--date` is for output of
 * benchmarks older than the `at` field.
 */
import fs from 'node:fs';
import { pathToFileURL } from 'node:url';

export interface BenchLine {
  bench: string;
  at?: string;
  machine?: { cpus?: number; cpuModel?: string; memoryGiB?: number; node?: string; postgres?: string; load1?: number };
  [field: string]: unknown;
}

interface Row {
  figure: string;
  measured: string;
  target?: string;
  peer?: string;
  ratio?: number;
}

/** The line a figure is compared with, and the rate compared; the peer's line gets no row of its own. */
interface Peer {
  find(line: BenchLine, all: BenchLine[]): BenchLine | undefined;
  /** What the peer is, in a few words. */
  name(peer: BenchLine): string;
  rate: string;
  /** The peer is also a figure of its own (a floor several rows compare with). */
  keepRow?: boolean;
}

export const RUNS_MARKER = '<!-- bench:report puts each new run here, newest first -->';

const n = (v: unknown): string => (typeof v === 'number' ? v.toLocaleString('en-US') : String(v ?? '?'));
/** How the loopback Brevo of a provider-import line answered: at its documented limits, or as fast as it could. */
const brevoPace = (l: BenchLine): string =>
  l.paced === true ? ' held to its documented rate limits' : l.paced === false ? ' answering as fast as it can' : '';
const ms = (p50: unknown, p99: unknown) => `p50 ${n(p50)} ms, p99 ${n(p99)} ms`;
/** The server's CPU per request, and PostgreSQL's where the run counted it (http-floors, from 2026-11-28). */
const cpuPerRequest = (l: BenchLine) =>
  `server CPU ${n(l.serverCpuMsPerRequest)} ms/request${l.postgresCpuMsPerRequest === undefined ? '' : `, PostgreSQL CPU ${n(l.postgresCpuMsPerRequest)} ms/request`}`;
const find =
  (bench: string, where: (l: BenchLine) => boolean = () => true) =>
  (_: BenchLine, all: BenchLine[]) =>
    all.find((l) => l.bench === bench && where(l));

/** How each benchmark's line reads; a line of a benchmark not listed here is shown field by field. */
const DESCRIBE: Record<string, (l: BenchLine) => Row> = {
  'eventstore.append': (l) => ({
    figure: `Event store: ${n(l.events)} single-event appends, ${n(l.writers)} writers (${l.impl})`,
    measured: `${n(l.eventsPerSec)} events/s, ${ms(l.p50Ms, l.p99Ms)}`,
  }),
  'eventstore.append-with-refusals': (l) => ({
    figure: `Event store: the same, one append in ${n(l.refuseEvery)} refused by PostgreSQL (${l.impl})`,
    measured: `${n(l.eventsPerSec)} events/s, ${ms(l.p50Ms, l.p99Ms)}`,
  }),
  'http.suppressions.post': (l) => ({
    figure: `\`POST /suppressions\`, ${n(l.connections)} connections, ${n(l.durationSec)} s`,
    measured: `${n(l.reqPerSec)} req/s, ${ms(l.p50Ms, l.p99Ms)}, ${n(l.non2xx)} non-2xx, ${cpuPerRequest(l)}`,
  }),
  'http.floors.get': (l) => ({
    figure: `\`GET /suppressions?limit=25\`, ${n(l.connections)} connections, 600 keys, round ${n(l.round)}: ${floorsServer(l)}`,
    measured: `${n(l.reqPerSec)} req/s, ${ms(l.p50Ms, l.p99Ms)}, ${cpuPerRequest(l)}`,
    target: '>= 0.8 x floor req/s, p99 <= 1.25 x floor',
  }),
  'http.floors.post': (l) => ({
    figure: `\`POST /suppressions\`, ${n(l.connections)} connections, 600 keys, round ${n(l.round)}: ${floorsServer(l)}`,
    measured: `${n(l.reqPerSec)} req/s, ${ms(l.p50Ms, l.p99Ms)}, ${cpuPerRequest(l)}`,
    target: '>= 1.0 x floor req/s, p99 <= floor',
  }),
  'http.floors.email': (l) => ({
    figure: `\`POST /emails\`, ${n(l.connections)} connections, 600 keys, round ${n(l.round)}: ${floorsServer(l)}`,
    measured: `${n(l.reqPerSec)} req/s, ${ms(l.p50Ms, l.p99Ms)}, ${cpuPerRequest(l)}`,
    target: '>= 1.0 x floor req/s, p99 <= floor',
  }),
  'suppressions-list.catch-up': (l) => ({
    figure: `Projector catch-up of ${n(l.events)} suppression events`,
    measured: `${n(l.eventsPerSec)} events/s (${n(l.seconds)} s)`,
  }),
  'suppressions-list.get': (l) => ({
    figure: `\`GET /suppressions\` ${l.kind} over ${n(l.tableRows)} rows`,
    measured: `${ms(l.p50Ms, l.p99Ms)} (${n(l.requests)} requests)`,
  }),
  'rebuild.copy-floor': (l) => ({
    figure: `COPY of ${n(l.rows)} read-model rows into an unindexed table`,
    measured: `${n(l.eventsPerSec)} rows/s (${n(l.seconds)} s)`,
  }),
  'rebuild.suppressions': (l) => ({
    figure: `Online rebuild of the suppressions read model from ${n(l.events)} events`,
    measured: `${n(l.eventsPerSec)} events/s (${n(l.seconds)} s)`,
  }),
  'template-render.cold': (l) => ({
    figure: `Template render, ${n(l.blocks)} blocks, ${n(l.props)} props: compile and fill every time`,
    measured: `${n(l.rendersPerSec)} renders/s, ${ms(l.p50Ms, l.p99Ms)}`,
  }),
  'template-render.cached': (l) => ({
    figure: `Template render, ${n(l.blocks)} blocks, ${n(l.props)} props: cached published version`,
    measured: `${n(l.rendersPerSec)} renders/s, ${ms(l.p50Ms, l.p99Ms)} (one compile ${n(l.compileMs)} ms)`,
  }),
  'templates-list.get': (l) => ({
    figure: `\`GET /templates\` ${l.kind} over ${n(l.tableRows)} templates`,
    measured: `${ms(l.p50Ms, l.p99Ms)} (${n(l.requests)} requests)`,
  }),
  'webhooks.burst': (l) => webhooks(l, 'burst'),
  'webhooks.paced': (l) => webhooks(l, 'paced'),
  'http.events.batch': (l) => ({
    figure: `\`POST /events/batch\` of ${n(l.batchSize)}, ${n(l.connections)} connections, ${n(l.durationSec)} s`,
    measured: `${n(l.eventsPerSec)} events/s stored (${n(l.reqPerSec)} req/s), ${ms(l.p50Ms, l.p99Ms)}, ${n(l.non2xx)} non-2xx, ${n(l.automationRuns)} automation runs`,
  }),
  'contacts.get': (l) => ({
    figure: `\`GET ${String(l.kind).startsWith('growth') ? '/audiences/growth' : '/contacts'}\` ${l.kind} over ${n(l.contacts)} contacts`,
    measured: `${ms(l.p50Ms, l.p99Ms)} (${n(l.requests)} requests)`,
  }),
  'outbound.nodemailer': (l) => outbound(l, 'nodemailer alone (the floor)'),
  'outbound.nodemailer-dkim': (l) => outbound(l, 'nodemailer with its DKIM option'),
  'outbound.direct': (l) => outbound(l, 'ours: compose, DKIM-sign, direct delivery'),
  'emails-deliver.nodemailer': (l) => ({
    figure: `Sent mail: ${n(l.messages)} messages to a loopback MX by nodemailer alone with DKIM (the floor)`,
    measured: `${n(l.messagesPerSec)} messages/s, ${ms(l.p50Ms, l.p99Ms)}, RSS peak ${n(l.rssPeakMb)} MB`,
  }),
  'emails-deliver.drain': (l) => ({
    figure: `Sent mail: ${n(l.messages)} accepted messages drained by the delivery process manager (DKIM, direct delivery)`,
    measured: `${n(l.messagesPerSec)} messages/s; RSS ${n(l.rssStartMb)} → ${n(l.rssHalfMb)} → ${n(l.rssEndMb)} MB (peak ${n(l.rssPeakMb)}); accepted ${n(l.acceptedPerSec)}/s before`,
  }),
  'emails-deliver.paced': (l) => ({
    figure: `Sent mail: ${n(l.perSecond)} messages/s accepted while delivering, event→250`,
    measured: `${ms(l.eventTo250P50Ms, l.eventTo250P99Ms)} (to the worker's start: ${ms(l.eventToStartedP50Ms, l.eventToStartedP99Ms)})`,
  }),
  broadcasts: (l) => ({
    figure: `Broadcast to ${n(l.recipients)} contacts through sendEmail and delivery to a loopback MX (create → last 250)`,
    measured: `${n(l.recipientsPerSec)} recipients/s (${n(l.seconds)} s; snapshot ${n(l.snapshotSeconds)} s after the create${l.acceptedSeconds === undefined ? '' : `, last accepted at ${n(l.acceptedSeconds)} s`}); RSS ${n(l.rssStartMb)} → ${n(l.rssQuarterMb)} → ${n(l.rssHalfMb)} → ${n(l.rssThreeQuartersMb)} → ${n(l.rssEndMb)} MB (peak ${n(l.rssPeakMb)}); \`GET /broadcasts/{id}\` meanwhile ${ms(l.getP50Ms, l.getP99Ms)} (${n(l.getRequests)} requests)`,
  }),
  'domains.add': (l) => ({
    figure: `\`POST /domains\` ${n(l.domains)} domains, ${n(l.concurrency)} at once (a 2048-bit DKIM key each)`,
    measured: `${n(l.perSecond)} domains/s, ${ms(l.p50Ms, l.p99Ms)}, ${n(l.retriedAfter503)} retried after 503`,
  }),
  'domains.verify': (l) => {
    const slow = l.slowOutcome as { status?: string; error?: string | null } | undefined;
    return {
      figure: `Verify ${n(l.domains)} domains against loopback DNS, ${n(l.concurrency)} at once, one DKIM answer ${n(l.slowAnswerMs)} ms late`,
      measured:
        `${n(l.perSecond)} checks/s, the others ${ms(l.p50Ms, l.p99Ms)}, ${n(l.verified)} verified; the slow one took ` +
        `${n(l.slowCheckMs)} ms${slow ? ` (${slow.status}${slow.error ? `: ${slow.error}` : ''})` : ''}, ` +
        `${n(l.finishedWhileSlowWaited)} others finished meanwhile`,
    };
  },
  'domains.list': (l) => ({
    figure: String(l.kind).startsWith('floor')
      ? '`GET /ping` (the floor of any request at that load)'
      : `\`GET /domains\` ${l.kind}, limit ${n(l.limit)}, over ${n(l.domains)} domains`,
    measured: `${ms(l.p50Ms, l.p99Ms)} (${n(l.requests)} requests)`,
  }),
  'addresses-list.get': (l) => ({
    figure: `\`GET /addresses\` ${l.kind}${l.limit ? `, limit ${n(l.limit)}` : ''}, over 100,000 addresses`,
    measured: `${ms(l.p50Ms, l.p99Ms)} (${n(l.requests)} requests)`,
    target: l.kind === 'warm-up' ? undefined : 'p99 < 10 ms',
  }),
  'addresses-list.query': (l) => ({
    figure: `The address list query alone (no HTTP): ${l.kind}, limit ${n(l.limit)}`,
    measured: `${ms(l.p50Ms, l.p99Ms)} (${n(l.requests)} queries)`,
  }),
  'threads-list.catch-up': (l) => ({
    figure: `Threads projector catch-up of ${n(l.events)} MessageReceived events (${n(l.threads)} threads)`,
    measured: `${n(l.eventsPerSec)} events/s (${n(l.seconds)} s)`,
  }),
  'threads-list.get': (l) => ({
    figure: `\`GET /threads\` ${l.kind} over ${n(l.messages)} messages (${n(l.threads)} threads)`,
    measured: `${ms(l.p50Ms, l.p99Ms)} (${n(l.requests)} requests)`,
  }),
  'mailbox-import.floor': (l) => ({
    figure: `Mailbox import floor: a ${n(l.sizeMb)} MB mbox${l.format === 'tgz' ? ' in a tgz' : ''} (${n(l.messages)} messages) split and read by ${l.reader} alone, a child process`,
    measured: `${n(l.mbPerSec)} MB/s, ${n(l.messagesPerSec)} messages/s (${n(l.seconds)} s), RSS peak ${n(l.rssPeakMb)} MB (${n(l.rssBeforeMb)} MB loaded)`,
  }),
  'mailbox-import.run': (l) => ({
    figure: `Mailbox import: a ${n(l.sizeMb)} MB mbox${l.format === 'tgz' ? ` in a ${n(l.uploadMb)} MB tgz` : ''} (${n(l.messages)} messages, ${n(l.attachments)} with an attachment) through \`POST /imports/upload\` into one address`,
    measured: `${n(l.mbPerSec)} MB/s, ${n(l.messagesPerSec)} messages/s from start to completed (${n(l.seconds)} s; the upload ${n(l.uploadMbPerSec)} MB/s), server RSS ${n(l.rssStartMb)} MB idle, peak ${n(l.rssPeakMb)} MB, server CPU ${n(l.serverCpuShare)} cores`,
  }),
  'export.run': (l) => ({
    figure: `Export of ${n(l.messages)} messages (${n(l.rawMb)} MB raw, ${n(l.threads)} threads) into a zip on the file store`,
    measured: `${n(l.zipMbPerSec)} MB/s of zip (${n(l.zipMb)} MB in ${n(l.seconds)} s; raw mail ${n(l.rawMbPerSec)} MB/s, ${n(l.messagesPerSec)} messages/s), server RSS ${n(l.rssStartMb)} MB idle, peak ${n(l.rssPeakMb)} MB, server CPU ${n(l.serverCpuShare)} cores`,
  }),
  'export.zip': (l) => ({
    figure: `Zip library alone, ${l.library}: ${n(l.smallEntries)} small entries and ${n(l.largeEntries)} of ${n(l.largeMb)} MB into a sink, a child process`,
    measured: `${n(l.inMbPerSec)} MB/s in, ${n(l.outMbPerSec)} MB/s out (${n(l.seconds)} s), RSS peak ${n(l.rssPeakMb)} MB (${n(l.rssBeforeMb)} MB loaded)`,
  }),
  'provider-import.floor': (l) => ({
    figure: `Provider import floor${l.build ? ` (${l.build})` : ''}: the same ${n(l.pages)} pages (${n(l.rows)} rows) of the loopback Brevo${brevoPace(l)} read by our adapter alone, nothing written`,
    measured: `${n(l.rowsPerSec)} rows/s (${n(l.seconds)} s${l.refused ? `, ${n(l.refused)} pages refused with 429 and asked again` : ''})`,
  }),
  'provider-import.run': (l) => ({
    figure: `Provider import${l.build ? ` (${l.build})` : ''}: ${n(l.contacts)} contacts (${n(l.unsubscribed)} unsubscribed there) and ${n(l.suppressions)} suppressions from a loopback Brevo${brevoPace(l)} through \`POST /provider-imports\``,
    measured: `${n(l.rowsPerSec)} rows/s from start to completed (${n(l.seconds)} s), server RSS ${n(l.rssStartMb)} MB idle, peak ${n(l.rssPeakMb)} MB, server CPU ${n(l.serverCpuShare)} cores`,
  }),
  'oauth.connect': (l) => ({
    figure: `OAuth: ${n(l.connections)} apps connected over HTTP (consent page, approval with PKCE, code exchange), ${n(l.concurrency)} at a time`,
    measured: `${n(l.flowsPerSec)} connections/s (${n(l.seconds)} s)`,
  }),
  'oauth.get': (l) => ({
    figure: `\`GET /suppressions?limit=25\`, ${n(l.connections)} connections, ${n(l.credentials)} ${l.credential === 'token' ? 'OAuth access tokens' : 'API keys'}, round ${n(l.round)}`,
    measured: `${n(l.reqPerSec)} req/s, ${ms(l.p50Ms, l.p99Ms)}, ${n(l.non2xx)} non-2xx, ${cpuPerRequest(l)}`,
    ...(l.credential === 'token' ? { target: ">= 0.85 x the keys' req/s" } : {}),
  }),
  'oauth.refresh': (l) => ({
    figure: `OAuth: \`refresh_token\` grants, ${n(l.chains)} rotating chains for ${n(l.durationSec)} s, round ${n(l.round)}`,
    measured: `${n(l.refreshesPerSec)} refreshes/s, ${ms(l.p50Ms, l.p99Ms)}, failed: ${failures(l.failed)}, server CPU ${n(l.serverCpuMsPerRefresh)} ms/refresh`,
  }),
  'oauth.exchange': (l) => ({
    figure: `OAuth: ${n(l.exchanges)} codes exchanged with their PKCE verifiers, ${n(l.concurrency)} at a time, round ${n(l.round)}`,
    measured: `${n(l.exchangesPerSec)} exchanges/s, ${ms(l.p50Ms, l.p99Ms)}, failed: ${failures(l.failed)}, server CPU ${n(l.serverCpuMsPerExchange)} ms/exchange; the codes made through the consent form at ${n(l.codesMadePerSec)}/s`,
  }),
  'task-schedule.due': (l) => ({
    figure: `Task scheduler, ${n(l.tasks)} active hourly tasks, a sixtieth due each clock minute`,
    measured:
      `${n(l.ticksPerMinute)} ticks/min; per minute ${n(l.cpuMsPerMinute)} ms CPU, ${n(l.dbMsPerMinute)} ms in ` +
      `${n(l.queriesPerMinute)} queries; per tick over idle ${n(l.cpuMsPerTick)} ms CPU, ${n(l.dbMsPerTick)} ms of queries`,
  }),
  'task-schedule.idle': (l) => ({
    figure: `Task scheduler, ${n(l.tasks)} active tasks, nothing due (the whole service idle)`,
    measured: `per minute ${n(l.cpuMsPerMinute)} ms CPU, ${n(l.dbMsPerMinute)} ms in ${n(l.queriesPerMinute)} queries`,
  }),
  'task-steps.serial': (l) => ({
    figure: `Tasks' assistant: ${n(l.runs)} one-off jobs of ${n(l.turnsPerRun)} turns one after another, a tool call a turn; our overhead per step`,
    measured: `${ms(l.overheadP50Ms, l.overheadP99Ms)}, ${n(l.stepsPerSecond)} steps/s, requests of ${n(l.meanRequestBytes)} bytes on average, failed runs ${n(l.failedRuns)}`,
    peer: `the bare HTTP round trip to the model server: ${ms(l.floorRoundTripP50Ms, l.floorRoundTripP99Ms)}`,
    ratio: Number(l.ratioP99),
  }),
  'task-steps.concurrent': (l) => ({
    figure: `Tasks' assistant: the same ${n(l.runs)} jobs queued at once; overhead per step`,
    measured: `${ms(l.overheadP50Ms, l.overheadP99Ms)}, ${n(l.stepsPerSecond)} steps/s, failed runs ${n(l.failedRuns)}`,
  }),
  'contention.creates': (l) => ({
    figure: `${n(l.creates)} concurrent ${l.kind} creates in one workspace, ${n(l.systems)} system(s)`,
    measured: `${n(l.seconds)} s, ${ms(l.p50Ms, l.p99Ms)}, failed: ${failures(l.failed)}`,
  }),
};

const floorOf: Peer = {
  find: (l, all) =>
    l.server === 'floor'
      ? undefined
      : all.find((p) => p.bench === l.bench && p.server === 'floor' && p.round === l.round),
  name: () => 'bare Fastify + pg floor (bench/floor-server.ts)',
  rate: 'reqPerSec',
};

const PEERS: Record<string, Peer> = {
  'task-schedule.due': {
    find: find('task-schedule.idle'),
    name: () => 'nothing due',
    rate: 'cpuMsPerMinute',
    keepRow: true,
  },
  'rebuild.suppressions': {
    find: find('rebuild.copy-floor'),
    name: () => 'COPY into an unindexed table',
    rate: 'eventsPerSec',
  },
  'http.floors.get': floorOf,
  'http.floors.post': floorOf,
  'http.floors.email': floorOf,
  'eventstore.append': {
    find: (l, all) => (l.impl === 'emmett' ? undefined : find('eventstore.append', (p) => p.impl === 'emmett')(l, all)),
    name: () => 'emmett-postgresql',
    rate: 'eventsPerSec',
  },
  'eventstore.append-with-refusals': {
    find: find('eventstore.append', (p) => p.impl === 'ours'),
    name: () => 'ours without refusals',
    rate: 'eventsPerSec',
    keepRow: true,
  },
  'outbound.nodemailer-dkim': {
    find: find('outbound.nodemailer'),
    name: () => 'nodemailer alone',
    rate: 'messagesPerSec',
    keepRow: true,
  },
  'outbound.direct': {
    find: find('outbound.nodemailer'),
    name: () => 'nodemailer alone',
    rate: 'messagesPerSec',
    keepRow: true,
  },
  'mailbox-import.run': {
    find: (l, all) =>
      all.find(
        (p) =>
          p.bench === 'mailbox-import.floor' &&
          p.reader === 'mailparser' &&
          p.sizeMb === l.sizeMb &&
          p.format === l.format,
      ),
    name: () => 'mailparser alone',
    rate: 'messagesPerSec',
    keepRow: true,
  },
  'provider-import.run': {
    // The floor paged just before it: each run reads its own loopback provider first.
    find: (l, all) =>
      all
        .slice(0, all.indexOf(l))
        .reverse()
        .find((p) => p.bench === 'provider-import.floor' && p.paced === l.paced),
    name: () => 'the same pages read alone',
    rate: 'rowsPerSec',
    keepRow: true,
  },
  'export.zip': {
    // The yazl run just before: each round's pair ran back to back.
    find: (l, all) =>
      l.library === 'yazl'
        ? undefined
        : all
            .slice(0, all.indexOf(l))
            .reverse()
            .find((p) => p.bench === 'export.zip' && p.library === 'yazl'),
    name: () => 'yazl',
    rate: 'inMbPerSec',
    keepRow: true,
  },
  'oauth.get': {
    find: (l, all) =>
      l.credential === 'token'
        ? find('oauth.get', (p) => p.credential === 'key' && p.round === l.round)(l, all)
        : undefined,
    name: () => 'API keys, the same round',
    rate: 'reqPerSec',
  },
  'emails-deliver.drain': {
    find: find('emails-deliver.nodemailer'),
    name: () => 'nodemailer alone with DKIM',
    rate: 'messagesPerSec',
    keepRow: true,
  },
};

/** Lines that are not figures of their own: set-up, or a summary of two rows already shown. */
const LEFT_OUT = new Set([
  'eventstore.compare',
  'suppressions-list.seed',
  'templates-list.seed',
  'contacts.seed',
  'addresses-list.seed',
  'threads-list.seed',
  'export.seed',
  'http.floors.get.ratio',
  'http.floors.post.ratio',
  'http.floors.email.ratio',
  'oauth.get.ratio',
]);

const floorsServer = (l: BenchLine) =>
  l.server === 'baseline' ? 'the build before (BENCH_BASELINE)' : l.server === 'floor' ? 'the floor' : 'ours';

function webhooks(l: BenchLine, label: string): Row {
  return {
    figure: `Webhooks, ${label}: ${n(l.events)} events to ${n(l.endpoints)} endpoints`,
    measured: `${n(l.deliveriesPerSec)} deliveries/s, latency ${ms(l.latencyP50Ms, l.latencyP99Ms)}, server CPU ${n(l.serverCpuMsPerDelivery)} ms/delivery`,
  };
}

function outbound(l: BenchLine, who: string): Row {
  return {
    figure: `Outbound: ${n(l.messages)} messages to a loopback MX, ${n(l.inFlight)} in flight, ${who}`,
    measured: `${n(l.messagesPerSec)} messages/s, ${ms(l.p50Ms, l.p99Ms)}, RSS peak ${n(l.rssPeakMb)} MB`,
  };
}

function failures(failed: unknown): string {
  const entries = Object.entries((failed ?? {}) as Record<string, number>);
  return entries.length === 0 ? 'none' : entries.map(([code, count]) => `${count} ${code}`).join(', ');
}

/** Any other line: its scalar fields as they are, and a list of numbers (a course over the run) in order. */
function generic(l: BenchLine): Row {
  const numbers = (v: unknown): v is number[] => Array.isArray(v) && v.every((x) => typeof x === 'number');
  const fields = Object.entries(l)
    .filter(
      ([k, v]) =>
        !['bench', 'kind', 'at', 'machine', 'target', 'note'].includes(k) && (typeof v !== 'object' || numbers(v)),
    )
    .map(([k, v]) => `${k} ${numbers(v) ? v.map(n).join(' → ') : n(v)}`);
  return { figure: l.kind ? `${l.bench} ${l.kind}` : l.bench, measured: fields.join(', ') };
}

function describePeer(rule: Peer, peer: BenchLine): string {
  return `${rule.name(peer)}: ${(DESCRIBE[peer.bench] ?? generic)(peer).measured}`;
}

export function parseLines(text: string): BenchLine[] {
  const lines: BenchLine[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line.startsWith('{')) continue;
    try {
      const value = JSON.parse(line) as unknown;
      if (value && typeof value === 'object' && typeof (value as BenchLine).bench === 'string')
        lines.push(value as BenchLine);
    } catch {
      // A progress line that happens to start with a brace is not a figure.
    }
  }
  return lines;
}

export function rows(lines: BenchLine[]): { row: Row; load?: number }[] {
  const asPeer = new Set<BenchLine>();
  const out: { line: BenchLine; row: Row }[] = [];
  for (const line of lines) {
    if (LEFT_OUT.has(line.bench)) continue;
    if (typeof line.error === 'string') {
      out.push({ line, row: { figure: line.bench, measured: `error: ${line.error.split('\n')[0]}` } });
      continue;
    }
    const row = (DESCRIBE[line.bench] ?? generic)(line);
    if (typeof line.target === 'string') row.target = line.target;
    const rule = PEERS[line.bench];
    const peer = rule?.find(line, lines);
    if (rule && peer) {
      if (!rule.keepRow) asPeer.add(peer);
      row.peer = describePeer(rule, peer);
      const ours = Number(line[rule.rate]);
      const theirs = Number(peer[rule.rate]);
      if (ours > 0 && theirs > 0) row.ratio = Math.round((ours / theirs) * 100) / 100;
    }
    out.push({ line, row });
  }
  return out.filter((o) => !asPeer.has(o.line)).map((o) => ({ row: o.row, load: o.line.machine?.load1 }));
}

const cell = (s: string | undefined) => (s ?? '').replaceAll('|', '\\|').replaceAll('\n', ' ');

/** The markdown section for one run: a heading with its date and machine, then one table. */
export function reportRun(lines: BenchLine[], options: { date?: string } = {}): string {
  if (lines.length === 0) throw new Error('no benchmark lines (JSON objects with a `bench` field) in the input');
  const times = lines.map((l) => l.at).filter((t): t is string => typeof t === 'string');
  const first = times.sort()[0];
  const date = first ? `${first.slice(0, 10)} ${first.slice(11, 16)} UTC` : options.date;
  if (!date) throw new Error('the lines carry no `at` time: give the run date with --date');
  const m = lines.find((l) => l.machine)?.machine ?? {};
  const loads = lines.map((l) => l.machine?.load1).filter((x): x is number => typeof x === 'number');
  const machine = [
    m.cpus !== undefined ? `${m.cpus} CPUs${m.cpuModel ? ` (${m.cpuModel})` : ''}` : undefined,
    m.memoryGiB !== undefined ? `${m.memoryGiB} GiB` : undefined,
    m.node ? `Node ${m.node}` : undefined,
    m.postgres ? `PostgreSQL ${m.postgres}` : undefined,
    loads.length > 0 ? `1-minute load ${Math.min(...loads)}–${Math.max(...loads)}` : undefined,
  ]
    .filter(Boolean)
    .join(', ');
  const table = [
    '| Figure | Measured | Target | Peer or floor | Ratio | Load |',
    '|---|---|---|---|---|---|',
    ...rows(lines).map(
      ({ row, load }) =>
        `| ${cell(row.figure)} | ${cell(row.measured)} | ${cell(row.target)} | ${cell(row.peer)} | ${row.ratio === undefined ? '' : `${row.ratio}×`} | ${load ?? ''} |`,
    ),
  ];
  return [`### ${date}`, '', `Machine: ${machine || 'not recorded'}.`, '', ...table, ''].join('\n');
}

/** The document with `section` put first under the runs marker. */
export function insertRun(document: string, section: string): string {
  const at = document.indexOf(RUNS_MARKER);
  if (at < 0) throw new Error(`the document has no line ${RUNS_MARKER}`);
  const after = at + RUNS_MARKER.length;
  const older = document.slice(after).replace(/^\n+/, '');
  return `${document.slice(0, after)}\n\n${section.trimEnd()}\n${older ? `\n${older}` : ''}`;
}

function main(argv: string[]): number {
  const usage = 'usage: npm run bench:report -- <bench output file> [--write <markdown file>] [--date YYYY-MM-DD]';
  const options: { file?: string; write?: string; date?: string } = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--write' || arg === '--date') {
      const value = argv[++i];
      if (value === undefined) {
        console.error(usage);
        return 2;
      }
      options[arg === '--write' ? 'write' : 'date'] = value;
    } else if (options.file === undefined) options.file = arg;
    else {
      console.error(usage);
      return 2;
    }
  }
  if (options.file === undefined) {
    console.error(usage);
    return 2;
  }
  const section = reportRun(parseLines(fs.readFileSync(options.file, 'utf8')), { date: options.date });
  if (options.write) fs.writeFileSync(options.write, insertRun(fs.readFileSync(options.write, 'utf8'), section));
  else process.stdout.write(section);
  return 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href)
  process.exit(main(process.argv.slice(2)));
