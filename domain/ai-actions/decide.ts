import { fail } from '../shared/errors.ts';
import type { AI_PURPOSES, AiActionEvent } from './events.ts';
import type { AiActionsState } from './state.ts';

/**
 * AI actions a workspace may spend per UTC day when nothing else is configured
 * (`AI_DAILY_ACTIONS`). The spec leaves the amount unshown; a thousand covers a busy day of
 * translated sends while capping what a leaked key can spend on the model.
 */
export const DEFAULT_DAILY_AI_ACTIONS = 1000;

/** `YYYY-MM-DD` of an instant, UTC: the day an action counts in. */
export const dayOf = (now: string): string => now.slice(0, 10);

/** Whole seconds from `now` to the next 00:00 UTC, when the allowance starts again. */
export function secondsToNextDay(now: string): number {
  const d = new Date(now);
  const next = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1);
  return Math.max(1, Math.ceil((next - d.getTime()) / 1000));
}

/**
 * Spends `count` actions of the day, all or none: one request is one action (an advanced task
 * model will be ten), never part of one. Past the allowance: 429 `ai_quota_exceeded`.
 */
export function decideSpendAiActions(
  state: AiActionsState,
  cmd: { day: string; count: number; allowance: number; purpose: (typeof AI_PURPOSES)[number]; now: string },
): AiActionEvent[] {
  if (state.used + cmd.count > cmd.allowance)
    fail(
      'ai_quota_exceeded',
      `The workspace has used its ${cmd.allowance} AI actions of today; they start again at 00:00 UTC. Nothing was done.`,
    );
  return [
    {
      type: 'AiActionsSpent',
      data: { day: cmd.day, count: cmd.count, used: state.used + cmd.count, purpose: cmd.purpose, spentAt: cmd.now },
    },
  ];
}

/** Gives back actions whose model call failed; never below zero. */
export function decideReturnAiActions(
  state: AiActionsState,
  cmd: { day: string; count: number; now: string },
): AiActionEvent[] {
  const count = Math.min(cmd.count, state.used);
  if (count === 0) return [];
  return [{ type: 'AiActionsReturned', data: { day: cmd.day, count, used: state.used - count, returnedAt: cmd.now } }];
}
