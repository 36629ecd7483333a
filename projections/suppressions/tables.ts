import type { SuppressionReason } from '../../domain/suppressions/events.ts';
import type { Timestamp } from '../projector.ts';

/** The table of the suppressions read model (projector.ts). */
export interface SuppressionsTables {
  suppressions: {
    workspace_id: string;
    /** uuid */
    id: string;
    email: string;
    reason: SuppressionReason;
    detail: string | null;
    removable: boolean;
    created_at: Timestamp;
  };
}
