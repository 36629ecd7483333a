import { fail } from '../shared/errors.ts';
import type { ProviderImportEvent } from './events.ts';
import type { ImportReport, ImportResource, ProviderName } from './providers.ts';
import { SETTLED, type ProviderImportsState } from './state.ts';

export interface QueueProviderImport {
  importId: string;
  provider: ProviderName;
  resources: ImportResource[];
  now: string;
}

/** One import queued or running per workspace (409 `already_running`); a repeat of the same id decides nothing. */
export function decideQueueProviderImport(
  state: ProviderImportsState,
  cmd: QueueProviderImport,
): ProviderImportEvent[] {
  if (state.imports.has(cmd.importId)) return [];
  if (state.active !== null)
    fail(
      'already_running',
      `The provider import ${state.active} is under way; wait for it to end or cancel it first.`,
      null,
    );
  return [
    {
      type: 'ProviderImportQueued',
      data: { importId: cmd.importId, provider: cmd.provider, resources: cmd.resources, queuedAt: cmd.now },
    },
  ];
}

/** The process's first step; an import cancelled before it decides nothing. */
export function decideStartProviderImport(
  state: ProviderImportsState,
  cmd: { importId: string; now: string },
): ProviderImportEvent[] {
  if (state.imports.get(cmd.importId) !== 'queued') return [];
  return [{ type: 'ProviderImportStarted', data: { importId: cmd.importId, startedAt: cmd.now } }];
}

export function decideRecordProviderImportProgress(
  state: ProviderImportsState,
  cmd: { importId: string; report: ImportReport; now: string },
): ProviderImportEvent[] {
  if (state.imports.get(cmd.importId) !== 'running') return [];
  return [
    { type: 'ProviderImportProgressed', data: { importId: cmd.importId, report: { ...cmd.report }, at: cmd.now } },
  ];
}

/** Settles a running import (a queued one is first started by the process); a settled one decides nothing. */
export function decideFinishProviderImport(
  state: ProviderImportsState,
  cmd: { importId: string; report: ImportReport; error: string | null; now: string },
): ProviderImportEvent[] {
  const status = state.imports.get(cmd.importId);
  if (status !== 'running' && status !== 'queued') return [];
  const report = { ...cmd.report };
  if (cmd.error === null)
    return [{ type: 'ProviderImportCompleted', data: { importId: cmd.importId, report, completedAt: cmd.now } }];
  return [
    { type: 'ProviderImportFailed', data: { importId: cmd.importId, report, error: cmd.error, failedAt: cmd.now } },
  ];
}

/** Queued or running only; cancelling a settled import decides nothing (the api answers it as it is). */
export function decideCancelProviderImport(
  state: ProviderImportsState,
  cmd: { importId: string; now: string },
): ProviderImportEvent[] {
  const status = state.imports.get(cmd.importId);
  if (status === undefined) fail('resource_not_found', 'No such provider import.', 'id');
  if (SETTLED.includes(status)) return [];
  return [{ type: 'ProviderImportCancelled', data: { importId: cmd.importId, cancelledAt: cmd.now } }];
}
