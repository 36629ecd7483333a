import t from 'tap';
import {
  decideCompleteExport,
  decideFailExport,
  decideRecordExportFileDeleted,
  decideRecordExportProgress,
  decideRequestExport,
  decideStartExport,
  ExportLimitReached,
  nextExportAt,
} from '../../domain/exports/decide.ts';
import type { ExportEvent } from '../../domain/exports/events.ts';
import {
  emptyCalendar,
  entryName,
  foldLine,
  mboxFromLine,
  mboxFromTime,
  parseVCards,
  vCard,
} from '../../domain/exports/formats.ts';
import { exportsAggregate, type ExportsState } from '../../domain/exports/state.ts';
import { refusal } from '../support/refusal.ts';

const T0 = '2026-01-01T00:00:00.000Z';
const A = 'exp_00000000000000000000000a';
const B = 'exp_00000000000000000000000b';
const BY = { kind: 'apiKey' as const, id: 'key1' };
const at = (ms: number) => new Date(Date.parse(T0) + ms).toISOString();
const HOUR = 3_600_000;

const given = (events: ExportEvent[]): ExportsState =>
  events.reduce(exportsAggregate.evolve, exportsAggregate.initialState);
const requested = (exportId: string, createdAt = T0): ExportEvent => ({
  type: 'ExportRequested',
  data: { exportId, createdBy: BY, createdAt },
});
const started = (exportId: string, attempt = 1): ExportEvent => ({
  type: 'ExportStarted',
  data: { exportId, attempt, threadsTotal: 3, startedAt: T0 },
});
const completed = (exportId: string, attempt = 1): ExportEvent =>
  decideCompleteExport(given([requested(exportId), started(exportId, attempt)]), {
    exportId,
    attempt,
    file: { sha256: 'f'.repeat(64), size: 10 },
    fileName: 'x.zip',
    counts: { threads: 3 },
    now: T0,
  })[0]!;

t.test('request: queued; one at a time; once a day', async (t) => {
  t.match(decideRequestExport(given([]), { exportId: A, createdBy: BY, now: T0 }), [
    { type: 'ExportRequested', data: { exportId: A, createdBy: BY, createdAt: T0 } },
  ]);
  t.equal(
    refusal(() => decideRequestExport(given([requested(A)]), { exportId: B, createdBy: BY, now: at(1) })).code,
    'already_running',
  );
  t.equal(
    refusal(() => decideRequestExport(given([requested(A), started(A)]), { exportId: B, createdBy: BY, now: at(1) }))
      .code,
    'already_running',
  );
  const ready = given([requested(A), started(A), completed(A)]);
  const limited = refusal(() => decideRequestExport(ready, { exportId: B, createdBy: BY, now: at(23 * HOUR) }));
  t.ok(limited instanceof ExportLimitReached);
  t.equal(limited.code, 'export_limit_reached');
  t.equal(limited.retryAfterSeconds, 3600, 'Retry-After: until a day after the last');
  t.equal(nextExportAt(ready, at(HOUR)), at(24 * HOUR));
  t.match(decideRequestExport(ready, { exportId: B, createdBy: BY, now: at(24 * HOUR) }), [
    { type: 'ExportRequested' },
  ]);
  t.same(
    decideRequestExport(ready, { exportId: A, createdBy: BY, now: at(24 * HOUR) }),
    [],
    'the same id again: nothing',
  );
});

t.test('a failed export does not count against the day', async (t) => {
  const failed = given([
    requested(A),
    started(A),
    { type: 'ExportFailed', data: { exportId: A, error: 'x', failedAt: T0 } },
  ]);
  t.match(decideRequestExport(failed, { exportId: B, createdBy: BY, now: at(1) }), [{ type: 'ExportRequested' }]);
  t.equal(nextExportAt(failed, at(1)), at(1));
});

t.test('start: attempts count up; a later attempt replaces an earlier one', async (t) => {
  t.match(decideStartExport(given([requested(A)]), { exportId: A, attempt: 1, threadsTotal: 5, now: T0 }), [
    { type: 'ExportStarted', data: { attempt: 1, threadsTotal: 5 } },
  ]);
  const running = given([requested(A), started(A, 1)]);
  t.match(decideStartExport(running, { exportId: A, attempt: 2, threadsTotal: 5, now: T0 }), [
    { type: 'ExportStarted', data: { attempt: 2 } },
  ]);
  t.same(
    decideStartExport(running, { exportId: A, attempt: 1, threadsTotal: 5, now: T0 }),
    [],
    'not the same attempt twice',
  );
  t.same(decideStartExport(given([]), { exportId: A, attempt: 1, threadsTotal: 5, now: T0 }), []);
  const ready = given([requested(A), started(A), completed(A)]);
  t.same(decideStartExport(ready, { exportId: A, attempt: 2, threadsTotal: 5, now: T0 }), [], 'a ready export stays');
});

t.test('progress and completion of the latest attempt only', async (t) => {
  const restarted = given([requested(A), started(A, 1), started(A, 2)]);
  const progress = { exportId: A, phase: 'mail' as const, threadsDone: 1, threadsTotal: 3, now: T0 };
  t.same(decideRecordExportProgress(restarted, { ...progress, attempt: 1 }), []);
  t.match(decideRecordExportProgress(restarted, { ...progress, attempt: 2 }), [
    { type: 'ExportProgressed', data: { attempt: 2, threadsDone: 1 } },
  ]);
  const done = { exportId: A, file: { sha256: 'a'.repeat(64), size: 5 }, fileName: 'a.zip', counts: {}, now: T0 };
  t.same(decideCompleteExport(restarted, { ...done, attempt: 1 }), []);
  t.match(decideCompleteExport(restarted, { ...done, attempt: 2 }), [
    { type: 'ExportCompleted', data: { expiresAt: at(365 * 24 * HOUR), finishedAt: T0 } },
  ]);
});

t.test('fail, and the retention deleting a ready zip once', async (t) => {
  t.match(decideFailExport(given([requested(A)]), { exportId: A, error: 'disk', now: T0 }), [{ type: 'ExportFailed' }]);
  const ready = given([requested(A), started(A), completed(A)]);
  t.same(decideFailExport(ready, { exportId: A, error: 'late', now: T0 }), [], 'a ready export does not fail');
  t.match(decideRecordExportFileDeleted(ready, { exportId: A, now: T0 }), [{ type: 'ExportFileDeleted' }]);
  const gone = given([
    requested(A),
    started(A),
    completed(A),
    { type: 'ExportFileDeleted', data: { exportId: A, at: T0 } },
  ]);
  t.equal(gone.exports.get(A)?.status, 'expired');
  t.same(decideRecordExportFileDeleted(gone, { exportId: A, now: T0 }), []);
  t.same(decideRecordExportFileDeleted(given([requested(A)]), { exportId: A, now: T0 }), []);
});

t.test('formats: vCard 4, an empty calendar, mbox From lines, entry names', async (t) => {
  const card = vCard({
    id: 'con_1',
    email: 'ann@example.com',
    name: 'Ann; Smith, Jr',
    notes: 'line one\nline two',
    attributes: { 'plan "tier"': 'gold' },
    updatedAt: '2026-02-03T04:05:06.789Z',
  });
  t.equal(
    card,
    [
      'BEGIN:VCARD',
      'VERSION:4.0',
      'UID:con_1',
      'FN:Ann\\; Smith\\, Jr',
      'EMAIL:ann@example.com',
      'NOTE:line one\\nline two',
      `X-ATTRIBUTE;KEY="plan ^'tier^'":gold`,
      'REV:20260203T040506Z',
      'END:VCARD',
      '',
    ].join('\r\n'),
  );
  const long = `NOTE:${'é'.repeat(60)}`;
  const folded = foldLine(long);
  t.ok(
    folded.split('\r\n').every((l) => Buffer.byteLength(l) <= 75),
    'folded at 75 octets',
  );
  t.equal(folded.replace(/\r\n /g, '').trimEnd(), long, 'unfolds to the line, no character split');
  t.match(emptyCalendar(), /^BEGIN:VCALENDAR\r\nVERSION:2\.0\r\nPRODID:[^\r]+\r\n.*END:VCALENDAR\r\n$/s);
  t.equal(mboxFromLine('a@b.test', new Date('2024-01-02T10:00:00Z')), 'From a@b.test Tue Jan  2 10:00:00 2024\n');
  t.equal(mboxFromLine(null, new Date('2024-11-22T01:02:03Z')), 'From MAILER-DAEMON Fri Nov 22 01:02:03 2024\n');
  t.equal(entryName('*@example.com'), '_@example.com');
  t.equal(entryName('Work/Projects'), 'Work_Projects');
  t.equal(entryName('..'), '_');
  t.equal(entryName('Überweisung'), 'Überweisung');
});

t.test('formats read back: vCards in pieces, and the time of a From line', async (t) => {
  const cards = [
    vCard({
      id: 'con_1',
      email: 'ann@example.com',
      name: 'Ann; Smith, Jr. \\ and a long name that folds past seventy-five octets: Ünïcödé',
      notes: 'Line one,\nline two',
      attributes: { plan: 'pro', 'odd "key" ^': 'a;b,c' },
      updatedAt: '2024-01-02T03:04:05.678Z',
    }),
    vCard({
      id: 'con_2',
      email: 'bob@example.com',
      name: null,
      notes: null,
      attributes: {},
      updatedAt: '2024-01-02T03:04:05Z',
    }),
  ].join('');
  const bytes = Buffer.from(cards);
  // Cut every 7 bytes: inside lines, folds, CRLF pairs and UTF-8 characters.
  const pieces = async function* () {
    for (let i = 0; i < bytes.length; i += 7) yield bytes.subarray(i, i + 7);
  };
  const read = [];
  for await (const c of parseVCards(pieces())) read.push(c);
  t.same(read, [
    {
      email: 'ann@example.com',
      name: 'Ann; Smith, Jr. \\ and a long name that folds past seventy-five octets: Ünïcödé',
      notes: 'Line one,\nline two',
      attributes: { plan: 'pro', 'odd "key" ^': 'a;b,c' },
    },
    { email: 'bob@example.com', name: null, notes: null, attributes: {} },
  ]);
  const at = new Date('2024-01-03T09:05:07Z');
  t.equal(mboxFromTime(mboxFromLine('olga@outside.test', at)), at.toISOString());
  t.equal(mboxFromTime(mboxFromLine(null, new Date('2024-11-27T23:59:59Z'))), '2024-11-27T23:59:59.000Z');
  t.equal(mboxFromTime('From someone without a time'), null);
});
