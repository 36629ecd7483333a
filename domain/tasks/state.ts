import type { PAUSED_REASONS, TaskEvent, TaskOwner, TaskRunEvent, TaskSettings } from './events.ts';

export interface TaskState extends TaskSettings {
  taskId: string;
  owner: TaskOwner;
  status: 'active' | 'paused';
  pausedReason: (typeof PAUSED_REASONS)[number] | null;
  /** Failed runs in a row since the last success or resume. */
  failuresInRow: number;
  /** The runs whose end was told last (a few): an end told again is known. */
  endedRuns: readonly string[];
}

/** How many ended runs a task remembers: runs of one task end about in order, so a few suffice. */
const ENDED_RUNS_KEPT = 20;

export interface TasksState {
  tasks: ReadonlyMap<string, TaskState>;
}

export const tasksAggregate = {
  initialState: { tasks: new Map() } as TasksState,
  evolve(state: TasksState, event: TaskEvent): TasksState {
    const tasks = new Map(state.tasks);
    const d = event.data;
    const current = tasks.get(d.taskId);
    switch (event.type) {
      case 'TaskCreated': {
        const { taskId, owner, paused, createdAt: _, ...settings } = event.data;
        tasks.set(taskId, {
          ...settings,
          taskId,
          owner,
          status: paused ? 'paused' : 'active',
          pausedReason: paused ? 'user' : null,
          failuresInRow: 0,
          endedRuns: [],
        });
        break;
      }
      case 'TaskUpdated': {
        const { taskId: _, updatedAt: __, ...settings } = event.data;
        if (current) tasks.set(d.taskId, { ...current, ...settings });
        break;
      }
      case 'TaskPaused':
        if (current) tasks.set(d.taskId, { ...current, status: 'paused', pausedReason: event.data.reason });
        break;
      case 'TaskResumed':
        if (current) tasks.set(d.taskId, { ...current, status: 'active', pausedReason: null, failuresInRow: 0 });
        break;
      case 'TaskRunEnded':
        if (current)
          tasks.set(d.taskId, {
            ...current,
            failuresInRow: event.data.failuresInRow,
            endedRuns: [...current.endedRuns, event.data.runId].slice(-ENDED_RUNS_KEPT),
          });
        break;
      case 'TaskDeleted':
        tasks.delete(d.taskId);
        break;
    }
    return { tasks };
  },
};

/** One task's runs of one UTC day: how many, and which runs (by id) are already queued. */
export interface TaskRunDayState {
  count: number;
  runIds: ReadonlySet<string>;
}

export const taskRunDayAggregate = {
  initialState: { count: 0, runIds: new Set() } as TaskRunDayState,
  evolve(state: TaskRunDayState, event: TaskRunEvent): TaskRunDayState {
    return { count: event.data.count, runIds: new Set([...state.runIds, event.data.runId]) };
  },
};
