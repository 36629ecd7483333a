import type { UnsubscribeSource } from '../../domain/unsubscribes/events.ts';
import type { Timestamp } from '../projector.ts';

/** The unsubscribes that hold (projector.ts). */
export interface UnsubscribesTables {
  unsubscribes: {
    workspace_id: string;
    id: string;
    email: string;
    contact_id: string | null;
    /** Null: unsubscribed from everything the workspace sends in numbers. */
    audience_id: string | null;
    source: UnsubscribeSource;
    created_at: Timestamp;
  };
}
