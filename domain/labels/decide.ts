import { fail } from '../shared/errors.ts';
import { isSystemLabel } from '../threads/events.ts';
import type { LabelEvent } from './events.ts';
import type { LabelState, LabelsState } from './state.ts';

/** Custom labels one mailbox may hold. */
export const LABELS_MAX = 100;
export const LABEL_NAME_MAX = 100;

/** Names compare without case; a system label's name is taken in every mailbox. */
const key = (name: string) => name.toLowerCase();

function labelOf(state: LabelsState, labelId: string): LabelState {
  const label = state.labels.get(labelId);
  if (!label) fail('resource_not_found', 'No such label.', 'id');
  return label;
}

function nameFree(state: LabelsState, name: string, except: string | null): void {
  if (isSystemLabel(key(name)))
    fail('label_name_taken', `\`${key(name)}\` is a system label of every mailbox.`, 'name');
  for (const l of state.labels.values())
    if (l.labelId !== except && key(l.name) === key(name))
      fail('label_name_taken', `The mailbox has a label named ${JSON.stringify(l.name)} already.`, 'name');
}

/** Refused: a name the mailbox has or a system label's (409 `label_name_taken`), one past the limit (422). */
export function decideCreateLabel(
  state: LabelsState,
  cmd: { labelId: string; owner: string; address: string; name: string; color: string | null; now: string },
): LabelEvent[] {
  if (state.labels.has(cmd.labelId)) return [];
  nameFree(state, cmd.name, null);
  if (state.labels.size >= LABELS_MAX)
    fail('label_limit_reached', `A mailbox has at most ${LABELS_MAX} custom labels.`, null);
  const { labelId, owner, address, name, color, now } = cmd;
  return [{ type: 'LabelCreated', data: { labelId, owner, address, name, color, createdAt: now } }];
}

/** Name and colour (null: none); omitted ones stay. */
export function decideUpdateLabel(
  state: LabelsState,
  cmd: { labelId: string; name?: string; color?: string | null; now: string },
): LabelEvent[] {
  const label = labelOf(state, cmd.labelId);
  const name = cmd.name ?? label.name;
  const color = cmd.color === undefined ? label.color : cmd.color;
  if (name !== label.name) nameFree(state, name, label.labelId);
  if (name === label.name && color === label.color) return [];
  return [{ type: 'LabelUpdated', data: { labelId: label.labelId, name, color, updatedAt: cmd.now } }];
}

export function decideDeleteLabel(state: LabelsState, cmd: { labelId: string; owner: string; now: string }) {
  const label = labelOf(state, cmd.labelId);
  return [
    { type: 'LabelDeleted', data: { labelId: label.labelId, owner: cmd.owner, deletedAt: cmd.now } },
  ] as LabelEvent[];
}
