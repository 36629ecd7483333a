import { fail } from '../shared/errors.ts';
import type { AutomationEvent } from './events.ts';
import type { AutomationState } from './state.ts';
import type { Step, Trigger } from './steps.ts';

export interface Definition {
  name: string;
  trigger: Trigger;
  steps: Step[];
}

/** `ifMatch`: the stream revision the caller read (from the ETag); null writes unconditionally. */
function guard(state: AutomationState, ifMatch: number | null): void {
  // A deleted automation answers like one that never existed.
  if (state.automationId === null || state.deleted) fail('resource_not_found', 'No such automation.', 'id');
  if (ifMatch !== null && ifMatch !== state.revision)
    fail('version_conflict', 'The automation changed after you read it; read it again.');
}

export function decideCreateAutomation(
  state: AutomationState,
  cmd: { automationId: string; definition: Definition; status: 'live' | 'paused'; now: string },
): AutomationEvent[] {
  if (state.automationId !== null) return [];
  return [
    {
      type: 'AutomationCreated',
      data: { automationId: cmd.automationId, ...cmd.definition, status: cmd.status, createdAt: cmd.now },
    },
  ];
}

export function decideUpdateAutomation(
  state: AutomationState,
  cmd: { ifMatch: number | null; patch: Partial<Definition>; status?: 'live' | 'paused'; now: string },
): AutomationEvent[] {
  guard(state, cmd.ifMatch);
  const id = state.automationId!;
  const events: AutomationEvent[] = [];
  const current: Definition = { name: state.name, trigger: state.trigger, steps: state.steps };
  const next: Definition = { ...current, ...cmd.patch };
  if (JSON.stringify(next) !== JSON.stringify(current))
    events.push({ type: 'AutomationUpdated', data: { automationId: id, ...next, updatedAt: cmd.now } });
  if (cmd.status === 'paused' && state.status === 'live')
    events.push({ type: 'AutomationPaused', data: { automationId: id, pausedAt: cmd.now } });
  if (cmd.status === 'live' && state.status === 'paused')
    events.push({ type: 'AutomationResumed', data: { automationId: id, resumedAt: cmd.now } });
  return events;
}

export function decideDeleteAutomation(
  state: AutomationState,
  cmd: { ifMatch: number | null; now: string },
): AutomationEvent[] {
  guard(state, cmd.ifMatch);
  return [{ type: 'AutomationDeleted', data: { automationId: state.automationId!, deletedAt: cmd.now } }];
}
