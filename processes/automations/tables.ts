import type { Generated } from 'kysely';
import type { Filter, Instruction } from '../../domain/automations/steps.ts';
import type { Json, NullableTimestamp, Timestamp } from '../../projections/projector.ts';

/** The tables of automation enrolment (enrol.ts): its copy of the automations, and the runs under way. */
export interface EnrolmentTables {
  automation_defs: {
    id: string;
    workspace_id: string;
    live: boolean;
    trigger_event: string;
    filters: Json<Filter[]>;
    program: Json<Instruction[]>;
  };
  automation_runs: {
    id: string;
    workspace_id: string;
    automation_id: string;
    contact_id: string;
    email: string;
    properties: Json<Record<string, unknown>>;
    program: Json<Instruction[]>;
    pc: Generated<number>;
    status: 'ready' | 'waiting' | 'completed';
    wait_event: string | null;
    wake_at: NullableTimestamp;
    enqueued_at: NullableTimestamp;
    seq: Generated<number>;
    arrivals: Json<string[]>;
    position: number;
    trigger_event_id: string;
    enrolled_at: Timestamp;
    completed_at: NullableTimestamp;
  };
  automation_sends: {
    id: string;
    workspace_id: string;
    automation_id: string;
    run_id: string;
    contact_id: string;
    email: string;
    template: string;
    subject: string | null;
    data: Json<Record<string, unknown>>;
    created_at: Timestamp;
    /** The step's sending address; null: none given (the send is refused). */
    from_address: string | null;
    /** Once sent (worker.ts, after the step's transaction): the email, or why it was refused. */
    email_id: string | null;
    refusal_code: string | null;
    refusal_message: string | null;
    sent_at: NullableTimestamp;
  };
  automation_event_outcomes: {
    event_id: string;
    enrolled: string[];
    resumed: number;
    created_at: Timestamp;
  };
}
