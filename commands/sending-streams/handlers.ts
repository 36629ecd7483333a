import type { SendingStream } from '../../domain/emails/events.ts';
import {
  assertLaneOpen,
  decidePauseStream,
  decideResumeStream,
  type LaneCounts,
} from '../../domain/sending-streams/decide.ts';
import { sendingStreamsStream, type PauseReason } from '../../domain/sending-streams/events.ts';
import { sendingStreamsAggregate, type LaneState } from '../../domain/sending-streams/state.ts';
import { execute, type Actor, type CommandContext } from '../execute.ts';
import { currentState } from '../followed.ts';

/**
 * A send is accepted only on an open lane (409 `stream_paused`). Read from the lanes' stream, not
 * a read model: a pause is seen by the very next send. Every send asks, so the stream is followed
 * (`currentState`): each check reads only what was appended since, one read for the checks of a batch.
 */
export async function assertStreamOpen(ctx: CommandContext, workspaceId: string, stream: SendingStream): Promise<void> {
  assertLaneOpen(await currentState(ctx, sendingStreamsStream(workspaceId), sendingStreamsAggregate), stream);
}

export async function resumeStream(
  ctx: CommandContext,
  actor: Actor,
  stream: SendingStream,
  now: string,
): Promise<LaneState> {
  const { state } = await execute(ctx, actor, sendingStreamsStream(actor.workspaceId), sendingStreamsAggregate, (s) =>
    decideResumeStream(s, { stream, now }),
  );
  return state[stream];
}

/** The guard's pause (processes/sending-streams/): a system write, idempotent on a paused lane. */
export async function pauseStream(
  ctx: CommandContext,
  actor: Actor,
  cmd: { stream: SendingStream; reason: PauseReason; rate: number; counts: LaneCounts },
  now: string,
): Promise<void> {
  await execute(ctx, actor, sendingStreamsStream(actor.workspaceId), sendingStreamsAggregate, (s) =>
    decidePauseStream(s, { ...cmd, now }),
  );
}
