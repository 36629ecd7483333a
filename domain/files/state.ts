import type { FileEvent } from './events.ts';

export interface FileState {
  exists: boolean;
  deleted: boolean;
  /** The drafts that name the file. */
  uses: ReadonlySet<string>;
}

export const fileAggregate = {
  initialState: { exists: false, deleted: false, uses: new Set() } as FileState,
  evolve(state: FileState, event: FileEvent): FileState {
    switch (event.type) {
      case 'FileUploaded':
        return { ...state, exists: true };
      case 'FileUseReserved':
        return { ...state, uses: new Set([...state.uses, event.data.draftId]) };
      case 'FileUseReleased':
        return { ...state, uses: new Set([...state.uses].filter((id) => id !== event.data.draftId)) };
      case 'FileDeleted':
        return { ...state, deleted: true };
    }
  },
};
