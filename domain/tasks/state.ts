import type { PAUSED_REASONS, TaskEvent, TaskOwner, TaskRunEvent, TaskSettings } from './events.ts';

export interface TaskState extends TaskSettings {
  taskId: string;
  owner: TaskOwner;
  status: 'active' | 'paused';
  pausedReason: (typeof PAUSED_REASONS)[number] | null;
}

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
        if (current) tasks.set(d.taskId, { ...current, status: 'active', pausedReason: null });
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
