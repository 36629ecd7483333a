import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { insertRun, parseLines, RUNS_MARKER, reportRun } from '../../bench/report.ts';
import { entryArgs } from '../support/paths.ts';

const machine = (load1: number) => ({
  cpus: 2,
  cpuModel: 'Test CPU',
  memoryGiB: 24,
  node: 'v20.20.2',
  postgres: '15.20',
  load1,
});

const output = [
  '[bench 10:00:00] machine {...}; running eventstore, outbound',
  JSON.stringify({
    bench: 'eventstore.append',
    impl: 'ours',
    eventsPerSec: 20000,
    p50Ms: 1.5,
    p99Ms: 4.4,
    events: 50000,
    writers: 32,
    target: '>= 5000 events/s',
    at: '2026-11-24T10:00:05.000Z',
    machine: machine(2.1),
  }),
  JSON.stringify({
    bench: 'eventstore.append-with-refusals',
    impl: 'ours_refusals',
    eventsPerSec: 18000,
    p50Ms: 1.6,
    p99Ms: 5,
    refuseEvery: 1000,
    at: '2026-11-24T10:00:09.000Z',
    machine: machine(2.4),
  }),
  JSON.stringify({
    bench: 'eventstore.append',
    impl: 'emmett',
    eventsPerSec: 4000,
    p50Ms: 7,
    p99Ms: 14.9,
    events: 50000,
    writers: 32,
    at: '2026-11-24T10:00:30.000Z',
    machine: machine(3),
  }),
  JSON.stringify({
    bench: 'eventstore.compare',
    impls: ['ours', 'emmett'],
    oursToEmmettThroughput: 5,
    at: '2026-11-24T10:00:31.000Z',
  }),
  JSON.stringify({ bench: 'contacts.seed', contacts: 1000000, seconds: 40, at: '2026-11-24T10:01:00.000Z' }),
  JSON.stringify({
    bench: 'outbound.nodemailer',
    messages: 20000,
    inFlight: 100,
    messagesPerSec: 800,
    p50Ms: 100,
    p99Ms: 200,
    rssPeakMb: 150,
    at: '2026-11-24T10:02:00.000Z',
    machine: machine(1.9),
  }),
  JSON.stringify({
    bench: 'outbound.direct',
    messages: 20000,
    inFlight: 100,
    messagesPerSec: 600,
    p50Ms: 150,
    p99Ms: 300,
    rssPeakMb: 160,
    ratio: 0.75,
    target: '>= 500 messages/s with DKIM signing',
    at: '2026-11-24T10:03:00.000Z',
    machine: machine(2),
  }),
  JSON.stringify({ bench: 'webhooks', error: 'Error: boom\n    at somewhere', at: '2026-11-24T10:04:00.000Z' }),
  JSON.stringify({
    bench: 'someday.new',
    kind: 'x',
    opsPerSec: 1234,
    rssCourseMb: [150, 152.5, 151],
    statusCodes: { '200': 3 },
    at: '2026-11-24T10:05:00.000Z',
  }),
  '{ not json',
].join('\n');

t.test('one table for the run: peers folded into the rows that compare with them', async (t) => {
  const section = reportRun(parseLines(output));
  const lines = section.split('\n');
  t.equal(lines[0], '### 2026-11-24 10:00 UTC');
  t.match(section, 'Machine: 2 CPUs (Test CPU), 24 GiB, Node v20.20.2, PostgreSQL 15.20, 1-minute load 1.9–3.');
  const table = lines.filter((l) => l.startsWith('| ') && !l.startsWith('| Figure'));
  t.equal(table.length, 6, 'ours, ours with refusals, nodemailer, direct, the error, the unknown bench');

  const ours = table.find((l) => l.includes('(ours)'))!;
  t.match(ours, '20,000 events/s, p50 1.5 ms, p99 4.4 ms');
  t.match(ours, '>= 5000 events/s');
  t.match(ours, 'emmett-postgresql: 4,000 events/s');
  t.match(ours, '| 5× | 2.1 |');
  t.notOk(
    table.some((l) => l.includes('(emmett)')),
    'the peer has no row of its own',
  );
  t.notOk(section.includes('oursToEmmett') || section.includes('contacts.seed'), 'summaries and seeds left out');

  const refusals = table.find((l) => l.includes('refused by PostgreSQL'))!;
  t.match(refusals, '| ours without refusals: 20,000 events/s');
  t.match(refusals, '0.9×');

  const direct = table.find((l) => l.includes('direct delivery'))!;
  t.match(direct, '| nodemailer alone: 800 messages/s');
  t.match(direct, '0.75×');
  t.ok(
    table.some((l) => l.includes('nodemailer alone (the floor)') && l.startsWith('| Outbound')),
    'a floor keeps its own row',
  );

  t.match(table.find((l) => l.startsWith('| webhooks'))!, '| error: Error: boom |', 'an error shows its first line');
  const generic = table.find((l) => l.startsWith('| someday.new x'))!;
  t.match(generic, 'opsPerSec 1,234, rssCourseMb 150 → 152.5 → 151 |', 'a list of numbers in its order');
  t.notMatch(generic, 'statusCodes', 'any other object is left out');
});

t.test('threads-list: the catch-up and each GET /threads kind a row, the seed left out', async (t) => {
  const at = '2026-11-26T20:45:24.000Z';
  const section = reportRun(
    parseLines(
      [
        { bench: 'threads-list.seed', events: 400, seconds: 0.2, via: 'SQL generate_series', at },
        {
          bench: 'threads-list.catch-up',
          events: 400,
          threads: 100,
          messages: 400,
          seconds: 3,
          eventsPerSec: 135.2,
          at,
        },
        {
          bench: 'threads-list.get',
          kind: 'page.walk',
          requests: 4,
          rowsSeen: 100,
          p50Ms: 12.36,
          p99Ms: 51.56,
          messages: 400,
          threads: 100,
          target: 'p99 < 20 ms',
          at,
        },
      ]
        .map((l) => JSON.stringify(l))
        .join('\n'),
    ),
  );
  const table = section.split('\n').filter((l) => l.startsWith('| ') && !l.startsWith('| Figure'));
  t.equal(table.length, 2, 'the catch-up and the page walk; no seed row');
  t.notOk(section.includes('threads-list.seed'), 'the seed is left out');
  t.match(
    table[0],
    '| Threads projector catch-up of 400 MessageReceived events (100 threads) | 135.2 events/s (3 s) |',
  );
  t.match(
    table[1],
    '| `GET /threads` page.walk over 400 messages (100 threads) | p50 12.36 ms, p99 51.56 ms (4 requests) |',
  );
  t.match(table[1], '| p99 < 20 ms |');
});

t.test('lines without a time need the date given; no lines is an error', async (t) => {
  const old = parseLines(JSON.stringify({ bench: 'rebuild.suppressions', events: 10, seconds: 1, eventsPerSec: 10 }));
  t.throws(() => reportRun(old), /--date/);
  t.match(reportRun(old, { date: '2026-11-22' }), /^### 2026-11-22\n\nMachine: not recorded\./);
  t.throws(() => reportRun(parseLines('nothing here\n')), /no benchmark lines/);
});

t.test('a run goes first under the marker, above the older runs', async (t) => {
  const doc = `# Benchmarks\n\n${RUNS_MARKER}\n\n### 2026-11-23\n\nolder\n`;
  const next = insertRun(doc, '### 2026-11-24\n\nnewer\n');
  t.ok(next.indexOf('### 2026-11-24') < next.indexOf('### 2026-11-23'));
  t.equal(next, `# Benchmarks\n\n${RUNS_MARKER}\n\n### 2026-11-24\n\nnewer\n\n### 2026-11-23\n\nolder\n`);
  t.throws(() => insertRun('# no marker\n', 'x'), /has no line/);
});

t.test('npm run bench:report writes the section into the document', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-report-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const input = path.join(dir, 'bench.jsonl');
  const doc = path.join(dir, 'benchmarks.md');
  fs.writeFileSync(input, output);
  fs.writeFileSync(doc, `# Benchmarks\n\n${RUNS_MARKER}\n`);
  const script = entryArgs('bench/report');
  const printed = execFileSync(process.execPath, [...script, input], { encoding: 'utf8' });
  t.match(printed, /^### 2026-11-24 10:00 UTC/);
  execFileSync(process.execPath, [...script, input, '--write', doc]);
  t.equal(fs.readFileSync(doc, 'utf8'), `# Benchmarks\n\n${RUNS_MARKER}\n\n${printed.trimEnd()}\n`);
});
