import type { ProviderImportEvent } from './events.ts';

export type ProviderImportStatus = 'queued' | 'running' | 'completed' | 'failed' | 'cancelled';

export const SETTLED: readonly ProviderImportStatus[] = ['completed', 'failed', 'cancelled'];

export interface ProviderImportsState {
  /** Every import of the workspace by id, with its status. */
  imports: Map<string, ProviderImportStatus>;
  /** The import queued or running, if any. */
  active: string | null;
}

export const providerImportsAggregate = {
  initialState: { imports: new Map(), active: null } as ProviderImportsState,
  evolve(state: ProviderImportsState, event: ProviderImportEvent): ProviderImportsState {
    const imports = new Map(state.imports);
    const { importId } = event.data;
    switch (event.type) {
      case 'ProviderImportQueued':
        imports.set(importId, 'queued');
        return { imports, active: importId };
      case 'ProviderImportStarted':
        imports.set(importId, 'running');
        return { ...state, imports };
      case 'ProviderImportCompleted':
      case 'ProviderImportFailed':
      case 'ProviderImportCancelled': {
        imports.set(
          importId,
          event.type === 'ProviderImportCompleted'
            ? 'completed'
            : event.type === 'ProviderImportFailed'
              ? 'failed'
              : 'cancelled',
        );
        return { imports, active: state.active === importId ? null : state.active };
      }
      default:
        return state;
    }
  },
};
