import type { LabelEvent } from './events.ts';

export interface LabelState {
  labelId: string;
  name: string;
  color: string | null;
}

export interface LabelsState {
  /** The live labels of the mailbox, in creation order. */
  labels: Map<string, LabelState>;
}

export const labelsAggregate = {
  initialState: { labels: new Map() } as LabelsState,
  evolve(state: LabelsState, event: LabelEvent): LabelsState {
    const labels = new Map(state.labels);
    switch (event.type) {
      case 'LabelCreated':
      case 'LabelUpdated': {
        const { labelId, name, color } = event.data;
        labels.set(labelId, { labelId, name, color });
        return { labels };
      }
      case 'LabelDeleted':
        labels.delete(event.data.labelId);
        return { labels };
    }
  },
};
