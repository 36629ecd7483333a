import { z } from 'zod';
import { resumeStream } from '../../../commands/sending-streams/handlers.ts';
import { SENDING_STREAMS, type SendingStream } from '../../../domain/emails/events.ts';
import { actorOf } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { ApiError } from '../../errors/api-error.ts';
import { operation, type Operation } from '../../route.ts';
import { sendingStreamView, viewLanes } from './views.ts';

const streamParams = z.object({ stream: z.string() });

export const sendingStreamOperations = (deps: ApiDeps): Operation[] => [
  operation({
    method: 'GET',
    url: '/sending/streams',
    operationId: 'listSendingStreams',
    summary: 'List sending lanes',
    description:
      'Scope: `settings:read`. Both lanes of the workspace (`transactional`, `broadcast`) with their sent, bounced and ' +
      'complained counts and rates over the last 7 UTC days (today included), their thresholds, and whether they are paused.',
    scope: 'settings:read',
    response: z.object({
      object: z.literal('list'),
      data: z.array(sendingStreamView),
      hasMore: z.literal(false),
      nextCursor: z.null(),
    }),
    handler: async ({ credential }) => ({
      object: 'list' as const,
      data: await viewLanes(deps.db, credential.workspaceId),
      hasMore: false as const,
      nextCursor: null,
    }),
  }),

  operation({
    method: 'POST',
    url: '/sending/streams/:stream/resume',
    operationId: 'resumeSendingStream',
    errors: ['resource_not_found', 'stream_locked'],
    summary: 'Resume a paused sending lane',
    description:
      'Scope: `settings:write`. Resumes the lane; counting for its thresholds starts again from now. A lane that is not ' +
      'paused answers as it is. 409 `stream_locked` when the lane paused again within a day of its last resume, until ' +
      '`lockedUntil`.',
    scope: 'settings:write',
    params: streamParams,
    response: sendingStreamView,
    handler: async ({ credential, params, request }) => {
      if (!(SENDING_STREAMS as readonly string[]).includes(params.stream))
        throw new ApiError('resource_not_found', 'No such sending lane: `transactional` or `broadcast`.', 'stream');
      const stream = params.stream as SendingStream;
      await resumeStream(deps.commands, actorOf(credential, request.id), stream, new Date().toISOString());
      return (await viewLanes(deps.db, credential.workspaceId)).find((l) => l.stream === stream)!;
    },
  }),
];
