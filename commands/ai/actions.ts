import {
  dayOf,
  decideReturnAiActions,
  decideSpendAiActions,
  secondsToNextDay,
} from '../../domain/ai-actions/decide.ts';
import { aiActionsStream, type AI_PURPOSES } from '../../domain/ai-actions/events.ts';
import { aiActionsAggregate } from '../../domain/ai-actions/state.ts';
import { DomainError } from '../../domain/shared/errors.ts';
import type { ChatModel } from '../../infra/ai/port.ts';
import { execute, type Actor, type CommandContext } from '../execute.ts';

/** The AI port as commands use it: built once in system.ts `openSystem`. */
export interface AiPorts {
  /** null without `AI_BASE_URL`: what needs it answers 409 (`ai_not_configured`, `translation_not_configured`). */
  model: ChatModel | null;
  /** AI actions a workspace may spend per UTC day (`AI_DAILY_ACTIONS`). */
  dailyActions: number;
}

/** 429 `ai_quota_exceeded`: today's actions are used up; they start again in `retryAfterSeconds` (00:00 UTC). */
export class AiQuotaExceeded extends DomainError {
  constructor(
    message: string,
    override readonly retryAfterSeconds: number,
  ) {
    super('ai_quota_exceeded', message);
  }
}

/**
 * Spends `count` AI actions of the workspace's day (one, but ten for a task's turn with the
 * `advanced` model), then does `work` with the model. When `work` fails (the model did not
 * answer, or answered with nothing usable) the actions are given back: a request that did nothing
 * costs nothing. The allowance is the workspace's whatever the mode.
 */
export async function withAiAction<T>(
  ctx: CommandContext,
  actor: Actor,
  workspaceId: string,
  ai: AiPorts & { model: ChatModel },
  purpose: (typeof AI_PURPOSES)[number],
  now: string,
  work: (model: ChatModel) => Promise<T>,
  count = 1,
): Promise<T> {
  const day = dayOf(now);
  const stream = aiActionsStream(workspaceId, day);
  const owner = { ...actor, workspaceId };
  try {
    await execute(ctx, owner, stream, aiActionsAggregate, (s) =>
      decideSpendAiActions(s, { day, count, allowance: ai.dailyActions, purpose, now }),
    );
  } catch (error) {
    if (error instanceof DomainError && error.code === 'ai_quota_exceeded')
      throw new AiQuotaExceeded(error.message, secondsToNextDay(now));
    throw error;
  }
  try {
    return await work(ai.model);
  } catch (error) {
    await execute(ctx, owner, stream, aiActionsAggregate, (s) =>
      decideReturnAiActions(s, { day, count, now: new Date().toISOString() }),
    );
    throw error;
  }
}
