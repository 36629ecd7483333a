import type { DraftContent } from '../../domain/drafts/events.ts';
import type { Json, Timestamp } from '../projector.ts';

/** The tables of the drafts read model (projector.ts). */
export interface DraftsTables {
  drafts: {
    workspace_id: string;
    id: string;
    /** The mailbox of `from`, lower-case, and its domain: what narrowed credentials are held to. */
    address: string;
    domain: string;
    content: Json<DraftContent>;
    created_at: Timestamp;
    updated_at: Timestamp;
  };
}
