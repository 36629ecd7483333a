import { z } from 'zod';
import { idPatterns } from '../../../domain/shared/ids.ts';
import { SUPPRESSION_REASONS } from '../../../domain/suppressions/events.ts';
import type { SuppressionEntry } from '../../../domain/suppressions/state.ts';
import { findSuppression, type SuppressionRow } from '../../../projections/suppressions/queries.ts';
import { lookup } from '../../lookups.ts';

export const suppressionView = z.object({
  object: z.literal('suppression'),
  id: z.string(),
  email: z.string(),
  reason: z.enum(SUPPRESSION_REASONS),
  detail: z.string().nullable(),
  removable: z.boolean(),
  createdAt: z.string(),
});

/** Straight from the row: a page shapes a hundred of these, and a copy and a date parse each cost. */
export function viewSuppression(row: SuppressionRow): z.infer<typeof suppressionView> {
  return {
    object: 'suppression',
    id: row.id,
    email: row.email,
    reason: row.reason,
    detail: row.detail,
    removable: row.removable,
    createdAt: row.created_at.toISOString(),
  };
}

/** The view from the entry a command decided on, where the read model is not consulted. */
export function viewEntry(e: SuppressionEntry): z.infer<typeof suppressionView> {
  return {
    object: 'suppression',
    id: e.suppressionId,
    email: e.email,
    reason: e.reason,
    detail: e.detail,
    removable: e.removable,
    createdAt: new Date(e.createdAt).toISOString(),
  };
}

export const suppressionOr404 = lookup(findSuppression, {
  code: 'resource_not_found',
  message: 'No such suppression.',
  param: 'id',
  pattern: idPatterns.suppression,
});
