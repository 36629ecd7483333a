import type { Timestamp } from '../projector.ts';

/** The tables of the workspaces read model (projector.ts). */
export interface WorkspacesTables {
  workspaces: {
    id: string;
    name: string;
    owner_user_id: string;
    owner_email: string;
    created_at: Timestamp;
  };
}
