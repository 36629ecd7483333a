import type { Kysely } from 'kysely';
import type { ReadModels } from '../tables.ts';

type Db = Kysely<ReadModels>;

/** The inbox the token opens: its id and the token's hash must both match, and its time not be up. */
export function findTempInbox(db: Db, inboxId: string, tokenHash: string, now: Date) {
  return db
    .selectFrom('temp_inboxes')
    .selectAll()
    .where('id', '=', inboxId)
    .where('token_hash', '=', tokenHash)
    .where('expires_at', '>', now)
    .executeTakeFirst();
}

/** Newest first, then by id; `after` is the last row of the page before. */
export function listTempInboxMessages(
  db: Db,
  inboxId: string,
  limit: number,
  after: { receivedAt: string; id: string } | null,
) {
  let query = db.selectFrom('temp_inbox_messages').selectAll().where('inbox_id', '=', inboxId);
  if (after)
    query = query.where((eb) =>
      eb.or([
        eb('received_at', '<', new Date(after.receivedAt)),
        eb.and([eb('received_at', '=', new Date(after.receivedAt)), eb('id', '<', after.id)]),
      ]),
    );
  return query
    .orderBy('received_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
}

export function findTempInboxMessage(db: Db, inboxId: string, messageId: string) {
  return db
    .selectFrom('temp_inbox_messages')
    .selectAll()
    .where('inbox_id', '=', inboxId)
    .where('id', '=', messageId)
    .executeTakeFirst();
}
