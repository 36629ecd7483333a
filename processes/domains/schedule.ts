import type { Kysely } from 'kysely';
import { settled } from '../../domain/domains/rechecks.ts';
import { defineReactor, type NullableTimestamp, type Projected, type Timestamp } from '../../projections/projector.ts';

export interface DomainCheckTables {
  domain_check_schedule: {
    domain_id: string;
    workspace_id: string;
    /** domain/domains/rechecks.ts `settled`, as of the last check. */
    settled: boolean;
    /** Since when the owner has had something to publish (added, a host set, a key rotated). */
    attention_since: Timestamp;
    last_checked_at: NullableTimestamp;
    /** Checks recorded so far: a job names the count it was published for, so a late duplicate does nothing. */
    checks: number;
    enqueued_at: NullableTimestamp;
  };
}

type Db = Kysely<DomainCheckTables>;
type Event = Projected<'DomainAdded' | 'DomainHostSet' | 'DomainDkimKeyRotated' | 'DomainChecked' | 'DomainDeleted'>;

/**
 * When each domain is due for its background DNS check (worker.ts claims the due ones). It follows
 * the log: a domain is due at once when added, and after each check by how settled it is; a host
 * set or a key rotated makes it one being set up again. Its table is the state of work done
 * outside (the checks), so it is a reactor: never rebuilt.
 */
export const domainCheckSchedule = defineReactor<DomainCheckTables>()({
  name: 'domain_check_schedule',
  version: 1,
  tables: ['domain_check_schedule'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.domain_check_schedule (
      domain_id uuid PRIMARY KEY,
      workspace_id text NOT NULL,
      settled boolean NOT NULL DEFAULT false,
      attention_since timestamptz NOT NULL,
      last_checked_at timestamptz,
      checks integer NOT NULL DEFAULT 0,
      enqueued_at timestamptz
    );`,
  reactsTo: ['DomainAdded', 'DomainHostSet', 'DomainDkimKeyRotated', 'DomainChecked', 'DomainDeleted'],
  react: async (db: Db, events: Event[]) => {
    for (const e of events) {
      const { workspaceId } = e.metadata;
      switch (e.type) {
        case 'DomainAdded':
          await db
            .insertInto('domain_check_schedule')
            .values({
              domain_id: e.data.domainId,
              workspace_id: workspaceId,
              settled: false,
              attention_since: e.data.createdAt,
              last_checked_at: null,
              checks: 0,
              enqueued_at: null,
            })
            .onConflict((oc) => oc.column('domain_id').doNothing())
            .execute();
          break;
        case 'DomainHostSet':
        case 'DomainDkimKeyRotated':
          await db
            .updateTable('domain_check_schedule')
            .set({ settled: false, attention_since: e.recordedAt })
            .where('domain_id', '=', e.data.domainId)
            .execute();
          break;
        case 'DomainChecked':
          await db
            .updateTable('domain_check_schedule')
            .set((eb) => ({
              settled: settled(e.data),
              last_checked_at: e.data.checkedAt,
              checks: eb('checks', '+', 1),
              enqueued_at: null,
            }))
            .where('domain_id', '=', e.data.domainId)
            .execute();
          break;
        case 'DomainDeleted':
          await db.deleteFrom('domain_check_schedule').where('domain_id', '=', e.data.domainId).execute();
          break;
      }
    }
  },
});
