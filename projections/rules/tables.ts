import type { Action, Condition } from '../../domain/rules/events.ts';
import type { Json, NullableTimestamp, Timestamp } from '../projector.ts';

/** The tables of the rules read model (projector.ts). */
export interface RulesTables {
  rules: {
    workspace_id: string;
    id: string;
    /** The mailbox: an address, or `*@<domain>` for a catch-all. */
    address: string;
    address_id: string | null;
    domain_id: string;
    /** The domain's name (what narrowed credentials hold). */
    domain: string;
    name: string;
    description: string | null;
    enabled: boolean;
    match: 'all' | 'any';
    conditions: Json<Condition[]>;
    actions: Json<Action[]>;
    stop_processing: boolean;
    position: number;
    last_matched_at: NullableTimestamp;
    match_count: number;
    created_at: Timestamp;
    updated_at: Timestamp;
  };
  /** Every run that matched a rule, kept after the rule is deleted. */
  rule_runs: {
    workspace_id: string;
    id: string;
    address: string;
    rule_ids: string[];
    thread_id: string | null;
    message_id: string | null;
    rejected: boolean;
    at: Timestamp;
  };
}
