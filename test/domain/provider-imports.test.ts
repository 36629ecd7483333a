import t from 'tap';
import {
  decideCancelProviderImport,
  decideFinishProviderImport,
  decideQueueProviderImport,
  decideRecordProviderImportProgress,
  decideStartProviderImport,
  type QueueProviderImport,
} from '../../domain/provider-imports/decide.ts';
import type { ProviderImportEvent } from '../../domain/provider-imports/events.ts';
import { emptyReport, inImportOrder, REPORT_ERRORS_MAX, withError } from '../../domain/provider-imports/providers.ts';
import { providerImportsAggregate } from '../../domain/provider-imports/state.ts';
import { refusal } from '../support/refusal.ts';

const NOW = '2026-01-01T00:00:00.000Z';
const A = 'pim_000000000000000000000001';
const B = 'pim_000000000000000000000002';
const given = (events: ProviderImportEvent[]) =>
  events.reduce(providerImportsAggregate.evolve, providerImportsAggregate.initialState);
const queued = (importId: string): ProviderImportEvent => ({
  type: 'ProviderImportQueued',
  data: { importId, provider: 'resend', resources: ['contacts'], queuedAt: NOW },
});
const started = (importId: string): ProviderImportEvent => ({
  type: 'ProviderImportStarted',
  data: { importId, startedAt: NOW },
});
const completed = (importId: string): ProviderImportEvent => ({
  type: 'ProviderImportCompleted',
  data: { importId, report: {}, completedAt: NOW },
});
const cancelled = (importId: string): ProviderImportEvent => ({
  type: 'ProviderImportCancelled',
  data: { importId, cancelledAt: NOW },
});
const queue = (importId: string): QueueProviderImport => ({
  importId,
  provider: 'resend',
  resources: ['contacts'],
  now: NOW,
});

t.test('queue: given nothing, when queued, then ProviderImportQueued', async (t) => {
  const events = decideQueueProviderImport(given([]), queue(A));
  t.same(events, [queued(A)]);
});

t.test('queue: given one queued or running, when another is queued, then 409 already_running', async (t) => {
  t.equal(refusal(() => decideQueueProviderImport(given([queued(A)]), queue(B))).code, 'already_running');
  t.equal(refusal(() => decideQueueProviderImport(given([queued(A), started(A)]), queue(B))).code, 'already_running');
});

t.test('queue: given the same id queued already, when queued again, then nothing (a repeat)', async (t) => {
  t.same(decideQueueProviderImport(given([queued(A)]), queue(A)), []);
});

t.test('queue: given one completed, failed or cancelled, when another is queued, then it is', async (t) => {
  const failed: ProviderImportEvent = {
    type: 'ProviderImportFailed',
    data: { importId: A, report: {}, error: 'key refused', failedAt: NOW },
  };
  for (const end of [[started(A), completed(A)], [started(A), failed], [cancelled(A)]])
    t.same(decideQueueProviderImport(given([queued(A), ...end]), queue(B)), [queued(B)]);
});

t.test('start: only a queued import starts; a cancelled one decides nothing', async (t) => {
  t.same(decideStartProviderImport(given([queued(A)]), { importId: A, now: NOW }), [started(A)]);
  t.same(decideStartProviderImport(given([queued(A), cancelled(A)]), { importId: A, now: NOW }), []);
  t.same(decideStartProviderImport(given([queued(A), started(A)]), { importId: A, now: NOW }), []);
});

t.test('progress: recorded while running, not after a cancel', async (t) => {
  const report = emptyReport();
  t.equal(
    decideRecordProviderImportProgress(given([queued(A), started(A)]), { importId: A, report, now: NOW })[0]?.type,
    'ProviderImportProgressed',
  );
  t.same(
    decideRecordProviderImportProgress(given([queued(A), started(A), cancelled(A)]), { importId: A, report, now: NOW }),
    [],
  );
});

t.test('finish: completed without an error, failed with one; a settled import decides nothing', async (t) => {
  const report = emptyReport();
  const running = given([queued(A), started(A)]);
  t.equal(
    decideFinishProviderImport(running, { importId: A, report, error: null, now: NOW })[0]?.type,
    'ProviderImportCompleted',
  );
  const failed = decideFinishProviderImport(running, { importId: A, report, error: 'the key was refused', now: NOW });
  t.match(failed, [{ type: 'ProviderImportFailed', data: { error: 'the key was refused' } }]);
  t.same(
    decideFinishProviderImport(given([queued(A), cancelled(A)]), { importId: A, report, error: null, now: NOW }),
    [],
  );
});

t.test('finish: the running import ends, so another may be queued', async (t) => {
  const state = given([queued(A), started(A), completed(A)]);
  t.equal(state.active, null);
  t.equal(state.imports.get(A), 'completed');
});

t.test('cancel: queued or running → cancelled; settled → nothing; unknown → 404', async (t) => {
  t.same(decideCancelProviderImport(given([queued(A)]), { importId: A, now: NOW }), [cancelled(A)]);
  t.same(decideCancelProviderImport(given([queued(A), started(A)]), { importId: A, now: NOW }), [cancelled(A)]);
  t.same(decideCancelProviderImport(given([queued(A), started(A), completed(A)]), { importId: A, now: NOW }), []);
  t.same(decideCancelProviderImport(given([queued(A), cancelled(A)]), { importId: A, now: NOW }), []);
  t.equal(refusal(() => decideCancelProviderImport(given([]), { importId: A, now: NOW })).code, 'resource_not_found');
  t.equal(given([queued(A), cancelled(A)]).active, null);
});

t.test('report: errors kept up to the limit, the rest counted; resources in import order', async (t) => {
  let report = emptyReport();
  for (let i = 0; i < REPORT_ERRORS_MAX + 3; i++)
    report = withError(report, { resource: 'contacts', sourceId: String(i), code: 'invalid_parameter', message: 'x' });
  t.equal(report.errors.length, REPORT_ERRORS_MAX);
  t.equal(report.errorsDropped, 3);
  t.same(inImportOrder(['webhooks', 'contacts', 'audiences', 'contacts']), ['audiences', 'contacts', 'webhooks']);
});
