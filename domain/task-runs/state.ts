import type { RunError, TaskRunStepEvent } from './events.ts';

export interface RunToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** A turn of the model and what became of each call it asked for. */
export interface RunTurn {
  content: string | null;
  toolCalls: RunToolCall[];
  /** By call id: the text the model is told. */
  results: ReadonlyMap<string, string>;
  /** Calls that write, recorded as started. */
  started: ReadonlySet<string>;
}

export interface RunApproval {
  approvalId: string;
  callId: string;
  status: 'pending' | 'approved' | 'denied';
  requestedAt: string;
}

export interface TaskRunState {
  /** `waiting`: a call waits for a person's approval. */
  status: 'queued' | 'running' | 'waiting' | 'succeeded' | 'failed';
  /** The steps taken (turns and tool calls): the next is numbered `steps + 1`. */
  steps: number;
  turns: RunTurn[];
  /** By approval id. */
  approvals: ReadonlyMap<string, RunApproval>;
  error: RunError | null;
}

export const taskRunAggregate = {
  initialState: { status: 'queued', steps: 0, turns: [], approvals: new Map(), error: null } as TaskRunState,
  evolve(state: TaskRunState, event: TaskRunStepEvent): TaskRunState {
    switch (event.type) {
      case 'TaskRunStarted':
        return { ...state, status: 'running' };
      case 'TaskRunTurnTaken': {
        const { content, toolCalls, made = toolCalls.length } = event.data;
        const refused = JSON.stringify({
          error: {
            code: 'too_many_calls',
            message: `Not made: a turn makes at most ${made} calls. Ask again, in a later turn, for those still needed.`,
          },
        });
        const results = new Map(toolCalls.slice(made).map((c) => [c.id, refused]));
        return {
          ...state,
          steps: event.data.step,
          turns: [...state.turns, { content, toolCalls, results, started: new Set() }],
        };
      }
      case 'TaskRunToolCallStarted':
        return withLastTurn(state, (turn) => ({ ...turn, started: new Set([...turn.started, event.data.callId]) }));
      case 'TaskRunToolCallFinished': {
        const { callId, result, error } = event.data;
        const said = error ? JSON.stringify({ error }) : (result ?? 'null');
        return {
          ...withLastTurn(state, (turn) => ({ ...turn, results: new Map([...turn.results, [callId, said]]) })),
          steps: event.data.step,
        };
      }
      case 'TaskRunApprovalRequested': {
        const { approvalId, callId, requestedAt } = event.data;
        const approvals = new Map([
          ...state.approvals,
          [approvalId, { approvalId, callId, status: 'pending' as const, requestedAt }],
        ]);
        return { ...state, status: isFinished(state) ? state.status : 'waiting', approvals };
      }
      case 'TaskRunApprovalDecided': {
        const { approvalId, decision } = event.data;
        const asked = state.approvals.get(approvalId);
        if (!asked) return state;
        const approvals = new Map([...state.approvals, [approvalId, { ...asked, status: decision }]]);
        const waiting = [...approvals.values()].some((a) => a.status === 'pending');
        return { ...state, status: isFinished(state) ? state.status : waiting ? 'waiting' : 'running', approvals };
      }
      case 'TaskRunSucceeded':
        return { ...state, status: 'succeeded' };
      case 'TaskRunFailed':
        return { ...state, status: 'failed', error: event.data.error };
    }
  },
};

function withLastTurn(state: TaskRunState, change: (turn: RunTurn) => RunTurn): TaskRunState {
  const last = state.turns.at(-1);
  if (!last) return state;
  return { ...state, turns: [...state.turns.slice(0, -1), change(last)] };
}

export const isFinished = (state: Pick<TaskRunState, 'status'>) =>
  state.status === 'succeeded' || state.status === 'failed';

/** The approval asked for a call, if any. */
export const approvalOf = (state: TaskRunState, callId: string): RunApproval | undefined =>
  [...state.approvals.values()].find((a) => a.callId === callId);
