import { z } from 'zod';
import { defineEvent, type EventOf } from '../shared/events.ts';

export const WorkspaceCreated = defineEvent(
  'WorkspaceCreated',
  z.object({
    workspaceId: z.string(),
    name: z.string(),
    ownerUserId: z.string(),
    ownerEmail: z.string(),
    createdAt: z.string(),
  }),
);

export const workspaceEvents = [WorkspaceCreated];
export type WorkspaceEvent = EventOf<typeof WorkspaceCreated>;

export const workspaceStream = (workspaceId: string) => `ws-${workspaceId}.workspace`;
