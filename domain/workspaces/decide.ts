import { fail } from '../shared/errors.ts';
import type { WorkspaceEvent } from './events.ts';

export interface WorkspaceState {
  exists: boolean;
}

export const workspaceAggregate = {
  initialState: { exists: false } as WorkspaceState,
  evolve: (_state: WorkspaceState, _event: WorkspaceEvent): WorkspaceState => ({ exists: true }),
};

export interface CreateWorkspace {
  workspaceId: string;
  name: string;
  ownerUserId: string;
  ownerEmail: string;
  now: string;
}

export function decideCreateWorkspace(state: WorkspaceState, cmd: CreateWorkspace): WorkspaceEvent[] {
  if (state.exists) fail('invalid_parameter', 'The workspace exists already.', 'workspaceId');
  return [
    {
      type: 'WorkspaceCreated',
      data: {
        workspaceId: cmd.workspaceId,
        name: cmd.name,
        ownerUserId: cmd.ownerUserId,
        ownerEmail: cmd.ownerEmail,
        createdAt: cmd.now,
      },
    },
  ];
}
