import type { Generated, GeneratedAlways } from 'kysely';
import type { ContactSource } from '../../domain/contacts/events.ts';
import type { Json, NullableTimestamp, Timestamp } from '../projector.ts';

/** `timestamp` (without time zone): UTC buckets, read as a Date, written by the database. */
type UtcBucket = Date;

/** The tables of the contacts read model (projector.ts): the book, the audiences and the membership history. */
export interface ContactsTables {
  contacts: {
    workspace_id: string;
    id: string;
    email: string;
    name: string | null;
    notes: string | null;
    attributes: Json<Record<string, string>>;
    source: ContactSource;
    last_seen_at: NullableTimestamp;
    created_at: Timestamp;
    updated_at: Timestamp;
    /** The words of the address and the name, for `q`. */
    search: GeneratedAlways<string>;
  };
  audiences: {
    workspace_id: string;
    id: string;
    name: string;
    description: string | null;
    show_on_preferences: boolean;
    builtin: 'default' | null;
    member_count: Generated<number>;
    created_at: Timestamp;
    updated_at: Timestamp;
  };
  audience_tombstones: {
    workspace_id: string;
    id: string;
    created_at: Timestamp;
  };
  audience_members: {
    workspace_id: string;
    audience_id: string;
    contact_id: string;
    joined_at: Timestamp;
    left_at: NullableTimestamp;
  };
  audience_member_hours: {
    audience_id: string;
    hour: UtcBucket;
    joins: number;
    leaves: number;
  };
  audience_member_days: {
    audience_id: string;
    day: UtcBucket;
    joins: number;
    leaves: number;
  };
  contact_audience_sets: {
    contact_id: string;
    workspace_id: string;
    /** Sorted ids of the custom audiences the contact is in now. */
    audience_ids: string[];
  };
  audience_set_counts: {
    workspace_id: string;
    audience_ids: string[];
    contacts: number;
  };
}
