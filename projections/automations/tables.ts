import type { Json, Timestamp } from '../projector.ts';

/** The table of the automations read model (projector.ts). */
export interface AutomationsTables {
  automations: {
    id: string;
    workspace_id: string;
    name: string;
    status: 'live' | 'paused';
    trigger: Json<{ event: string; filters: Record<string, unknown>[] }>;
    steps: Json<Record<string, unknown>[]>;
    revision: number;
    created_at: Timestamp;
    updated_at: Timestamp;
  };
}
