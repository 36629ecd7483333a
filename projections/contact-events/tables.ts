import type { Json, Timestamp } from '../projector.ts';

/** The tables of the contact events read model (projector.ts). */
export interface ContactEventsTables {
  contact_events: {
    id: string;
    workspace_id: string;
    contact_id: string;
    email: string;
    name: string;
    properties: Json<Record<string, unknown>>;
    occurred_at: Timestamp;
    mode: 'live' | 'test';
    created_at: Timestamp;
  };
  contact_event_names: {
    workspace_id: string;
    name: string;
    /** The end of the clock hour of the name's newest occurrence. */
    occurred_before: Timestamp;
  };
}
