import type { Builtin } from '../../domain/roles/seeds.ts';
import type { Timestamp } from '../projector.ts';

/** The table of the roles read model (projector.ts). */
export interface RolesTables {
  roles: {
    id: string;
    workspace_id: string;
    name: string;
    name_lower: string;
    description: string | null;
    permissions: string[];
    builtin: Builtin | null;
    rank: number;
    created_at: Timestamp;
    updated_at: Timestamp;
  };
}
