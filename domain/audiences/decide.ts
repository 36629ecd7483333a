import { fail } from '../shared/errors.ts';
import type { AudienceEvent } from './events.ts';
import type { Audience, AudiencesState } from './state.ts';

/** Audiences a workspace may create; the default audience is the workspace's own and not counted. */
export const AUDIENCES_MAX = 100;
export const AUDIENCE_NAME_MAX = 120;
export const DEFAULT_AUDIENCE_NAME = 'All contacts';
/** The longest window of an audience growth read, in days (three years): `/audiences/growth` and a task's tool. */
export const GROWTH_DAYS_MAX = 1095;

/** The default audience, when the workspace has none yet (first use of contacts or audiences). */
export function decideEnsureDefaultAudience(
  state: AudiencesState,
  cmd: { audienceId: string; now: string },
): AudienceEvent[] {
  if (state.defaultId !== null) return [];
  return [
    {
      type: 'AudienceCreated',
      data: {
        audienceId: cmd.audienceId,
        name: DEFAULT_AUDIENCE_NAME,
        description: null,
        showOnPreferences: false,
        builtin: 'default',
        createdAt: cmd.now,
      },
    },
  ];
}

export interface CreateAudience {
  audienceId: string;
  defaultId: string;
  name: string;
  description: string | null;
  showOnPreferences: boolean;
  now: string;
}

/** Creates the default audience too when the workspace has none yet, in the same append. */
export function decideCreateAudience(state: AudiencesState, cmd: CreateAudience): AudienceEvent[] {
  const custom = [...state.audiences.values()].filter((a) => a.builtin === null).length;
  if (custom >= AUDIENCES_MAX) {
    fail(
      'workspace_limit_reached',
      `A workspace holds at most ${AUDIENCES_MAX} audiences besides the default one; delete one to free a place.`,
    );
  }
  return [
    ...decideEnsureDefaultAudience(state, { audienceId: cmd.defaultId, now: cmd.now }),
    {
      type: 'AudienceCreated',
      data: {
        audienceId: cmd.audienceId,
        name: cmd.name.trim(),
        description: cmd.description,
        showOnPreferences: cmd.showOnPreferences,
        builtin: null,
        createdAt: cmd.now,
      },
    },
  ];
}

export function audienceOr404(state: AudiencesState, audienceId: string, param: string | null = 'id'): Audience {
  return state.audiences.get(audienceId) ?? fail('audience_not_found', 'No such audience.', param);
}

export interface UpdateAudience {
  audienceId: string;
  /** Omitted keeps; null clears (description). */
  name?: string;
  description?: string | null;
  showOnPreferences?: boolean;
  now: string;
}

export function decideUpdateAudience(state: AudiencesState, cmd: UpdateAudience): AudienceEvent[] {
  const a = audienceOr404(state, cmd.audienceId);
  const name = cmd.name === undefined ? a.name : cmd.name.trim();
  const description = cmd.description === undefined ? a.description : cmd.description;
  const showOnPreferences = cmd.showOnPreferences ?? a.showOnPreferences;
  if (name === a.name && description === a.description && showOnPreferences === a.showOnPreferences) return [];
  return [
    {
      type: 'AudienceUpdated',
      data: { audienceId: a.audienceId, name, description, showOnPreferences, updatedAt: cmd.now },
    },
  ];
}

/** The default audience holds every contact and cannot go. */
export function decideDeleteAudience(state: AudiencesState, cmd: { audienceId: string; now: string }): AudienceEvent[] {
  const a = audienceOr404(state, cmd.audienceId);
  if (a.builtin !== null)
    fail('builtin_audience', 'The default audience holds every contact; it cannot be deleted.', 'id');
  return [{ type: 'AudienceDeleted', data: { audienceId: a.audienceId, deletedAt: cmd.now } }];
}
