import type { ExportEvent } from './events.ts';

export type ExportStatus = 'queued' | 'running' | 'ready' | 'failed' | 'expired';

export interface ExportState {
  status: ExportStatus;
  createdAt: string;
  attempt: number;
  expiresAt: string | null;
  file: { sha256: string; size: number } | null;
}

export interface ExportsState {
  exports: Map<string, ExportState>;
}

/** The export queued or running, if any. */
export const activeExport = (state: ExportsState) =>
  [...state.exports.entries()].find(([, e]) => e.status === 'queued' || e.status === 'running')?.[0] ?? null;

/** When the latest export that did not fail was asked for: the once-a-day limit counts from it. */
export const lastExportAt = (state: ExportsState): string | null =>
  [...state.exports.values()]
    .filter((e) => e.status !== 'failed')
    .reduce<string | null>((last, e) => (last === null || e.createdAt > last ? e.createdAt : last), null);

export const exportsAggregate = {
  initialState: { exports: new Map() } as ExportsState,
  evolve(state: ExportsState, event: ExportEvent): ExportsState {
    const exports = new Map(state.exports);
    const { exportId } = event.data;
    const current = exports.get(exportId);
    const set = (change: Partial<ExportState>) => {
      if (current) exports.set(exportId, { ...current, ...change });
      return { exports };
    };
    switch (event.type) {
      case 'ExportRequested':
        exports.set(exportId, {
          status: 'queued',
          createdAt: event.data.createdAt,
          attempt: 0,
          expiresAt: null,
          file: null,
        });
        return { exports };
      case 'ExportStarted':
        return set({ status: 'running', attempt: event.data.attempt });
      case 'ExportProgressed':
        return state;
      case 'ExportCompleted':
        return set({ status: 'ready', file: event.data.file, expiresAt: event.data.expiresAt });
      case 'ExportFailed':
        return set({ status: 'failed' });
      case 'ExportFileDeleted':
        return set({ status: 'expired', file: null });
    }
  },
};
