import { LABEL_NAME_MAX } from '../../domain/labels/decide.ts';
import { labelsStream } from '../../domain/labels/events.ts';
import { labelsAggregate } from '../../domain/labels/state.ts';
import { DomainError } from '../../domain/shared/errors.ts';
import { isSystemLabel } from '../../domain/threads/events.ts';
import { loadState, type Actor, type CommandContext } from '../execute.ts';
import { createLabel } from '../labels/handlers.ts';

/**
 * The custom labels of one mailbox by name, made as an import meets them: a name the mailbox has
 * is reused (names compare without case), a new one is created until the mailbox's label limit,
 * past which (or for a name no label may have) it is skipped and counted.
 */
export class ImportLabels {
  private byName: Map<string, string> | null = null;
  created = 0;
  readonly skipped = new Set<string>();

  constructor(
    private readonly ctx: CommandContext,
    private readonly actor: Actor,
    private readonly mailbox: { owner: string; address: string },
    skipped: Iterable<string>,
  ) {
    for (const name of skipped) this.skipped.add(name);
  }

  private async load(): Promise<Map<string, string>> {
    const { state } = await loadState(
      this.ctx,
      labelsStream(this.actor.workspaceId, this.mailbox.owner),
      labelsAggregate,
    );
    this.byName = new Map([...state.labels.values()].map((l) => [l.name.toLowerCase(), l.labelId]));
    return this.byName;
  }

  /** The live label ids of the mailbox (what a thread may carry). */
  async known(): Promise<Set<string>> {
    return new Set((this.byName ?? (await this.load())).values());
  }

  /** The ids for `names`, creating what is missing; skipped names are left out. */
  async ids(names: string[], now: string): Promise<string[]> {
    const byName = this.byName ?? (await this.load());
    const ids: string[] = [];
    for (const name of names) {
      const key = name.toLowerCase();
      const found = byName.get(key);
      if (found) {
        ids.push(found);
        continue;
      }
      if (this.skipped.has(key)) continue;
      if (name.length > LABEL_NAME_MAX || isSystemLabel(key)) {
        this.skipped.add(key);
        continue;
      }
      try {
        const { labelId } = await createLabel(this.ctx, this.actor, { ...this.mailbox, name, color: null }, now);
        byName.set(key, labelId);
        ids.push(labelId);
        this.created++;
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        if (error.code === 'label_name_taken') {
          // Made by someone else in between: read the mailbox's labels again.
          const again = (await this.load()).get(key);
          if (again) ids.push(again);
        } else this.skipped.add(key);
      }
    }
    return ids;
  }
}
