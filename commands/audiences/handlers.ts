import {
  decideCreateAudience,
  decideDeleteAudience,
  decideEnsureDefaultAudience,
  decideUpdateAudience,
  type UpdateAudience,
} from '../../domain/audiences/decide.ts';
import { audiencesStream } from '../../domain/audiences/events.ts';
import { audiencesAggregate, type AudiencesState } from '../../domain/audiences/state.ts';
import { execute, loadState, type Actor, type CommandContext } from '../execute.ts';
import { newId } from '../ids.ts';

export const loadAudiences = (ctx: CommandContext, workspaceId: string) =>
  loadState(ctx, audiencesStream(workspaceId), audiencesAggregate).then((r) => r.state);

/**
 * The workspace's audiences with the default one in them: created on first use, once (a race of
 * first uses appends on one stream with the revision read, so exactly one wins; the others decide
 * again and find it).
 */
export async function ensureDefaultAudience(ctx: CommandContext, actor: Actor, now: string): Promise<AudiencesState> {
  const loaded = await loadAudiences(ctx, actor.workspaceId);
  if (loaded.defaultId !== null) return loaded;
  const { state } = await execute(ctx, actor, audiencesStream(actor.workspaceId), audiencesAggregate, (s) =>
    decideEnsureDefaultAudience(s, { audienceId: newId.audience(), now }),
  );
  return state;
}

export async function createAudience(
  ctx: CommandContext,
  actor: Actor,
  input: { name: string; description: string | null; showOnPreferences: boolean },
  now: string,
): Promise<string> {
  const audienceId = newId.audience();
  const defaultId = newId.audience();
  await execute(ctx, actor, audiencesStream(actor.workspaceId), audiencesAggregate, (s) =>
    decideCreateAudience(s, { audienceId, defaultId, ...input, now }),
  );
  return audienceId;
}

export async function updateAudience(
  ctx: CommandContext,
  actor: Actor,
  input: Omit<UpdateAudience, 'now'>,
  now: string,
): Promise<void> {
  await execute(ctx, actor, audiencesStream(actor.workspaceId), audiencesAggregate, (s) =>
    decideUpdateAudience(s, { ...input, now }),
  );
}

export async function deleteAudience(
  ctx: CommandContext,
  actor: Actor,
  audienceId: string,
  now: string,
): Promise<void> {
  await execute(ctx, actor, audiencesStream(actor.workspaceId), audiencesAggregate, (s) =>
    decideDeleteAudience(s, { audienceId, now }),
  );
}
