import { fail } from '../shared/errors.ts';
import type { SuppressionEvent, SuppressionReason } from './events.ts';
import type { SuppressionState } from './state.ts';

export interface AddSuppression {
  suppressionId: string;
  email: string;
  reason: SuppressionReason;
  detail: string | null;
  now: string;
}

/** An address already suppressed keeps its entry, whatever either reason: adding is idempotent. */
export function decideAddSuppression(state: SuppressionState, cmd: AddSuppression): SuppressionEvent[] {
  if (state.entry) return [];
  return [
    {
      type: 'SuppressionAdded',
      data: {
        suppressionId: cmd.suppressionId,
        email: cmd.email,
        reason: cmd.reason,
        detail: cmd.detail,
        // A hard bounce means the address does not exist; sending to it again would only hurt the lane.
        removable: cmd.reason !== 'bounce',
        createdAt: cmd.now,
      },
    },
  ];
}

export function decideRemoveSuppression(
  state: SuppressionState,
  cmd: { suppressionId: string; now: string },
): SuppressionEvent[] {
  const entry = state.entry;
  if (!entry || entry.suppressionId !== cmd.suppressionId) fail('resource_not_found', 'No such suppression.', 'id');
  if (!entry.removable) fail('suppression_not_removable', 'A hard bounce is permanent and cannot be removed.');
  return [
    {
      type: 'SuppressionRemoved',
      data: { suppressionId: entry.suppressionId, email: entry.email, removedAt: cmd.now },
    },
  ];
}
