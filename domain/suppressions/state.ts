import type { SuppressionEvent, SuppressionReason } from './events.ts';

export interface SuppressionEntry {
  suppressionId: string;
  email: string;
  reason: SuppressionReason;
  detail: string | null;
  removable: boolean;
  createdAt: string;
}

/** The state of one address: its current entry, or null when it is not suppressed. */
export interface SuppressionState {
  entry: SuppressionEntry | null;
}

export const suppressionAggregate = {
  initialState: { entry: null } as SuppressionState,
  evolve(_state: SuppressionState, event: SuppressionEvent): SuppressionState {
    switch (event.type) {
      case 'SuppressionAdded':
        return { entry: { ...event.data } };
      case 'SuppressionRemoved':
        return { entry: null };
    }
  },
};
