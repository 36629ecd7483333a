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
  members: {
    workspace_id: string;
    user_id: string;
    email: string;
    is_owner: boolean;
    role_id: string | null;
    created_at: Timestamp;
  };
}
