import { sql, type Kysely } from 'kysely';
import { sentBy } from '../../domain/sending-streams/decide.ts';
import { defineProjector, type Projected } from '../projector.ts';
import type { SendingStreamsTables } from './tables.ts';

type Db = Kysely<SendingStreamsTables>;

const count = (
  db: Db,
  workspaceId: string,
  stream: string,
  at: string,
  sent: number,
  bounced: number,
  complained: number,
) =>
  sql`INSERT INTO sending_stream_days (workspace_id, stream, day, sent, bounced, complained)
    VALUES (${workspaceId}, ${stream}, ${at.slice(0, 10)}::date, ${sent}, ${bounced}, ${complained})
    ON CONFLICT (workspace_id, stream, day) DO UPDATE SET sent = sending_stream_days.sent + excluded.sent,
      bounced = sending_stream_days.bounced + excluded.bounced, complained = sending_stream_days.complained + excluded.complained`.execute(
    db,
  );

/**
 * Final answers and complaints per lane and UTC day (the day of the answer), and each lane's pause.
 * Counted as the guard counts (processes/sending-streams/guard.ts): a recipient is sent once it
 * is delivered, bounced or expired (a bounce reported by a DSN after delivery is not sent again);
 * a bounce is a hard one.
 */
export const sendingStreamsProjector = defineProjector<SendingStreamsTables>()({
  name: 'sending_streams',
  version: 1,
  tables: ['sending_stream_days', 'sending_stream_states'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.sending_stream_days (
      workspace_id text NOT NULL,
      stream text NOT NULL,
      day date NOT NULL,
      sent integer NOT NULL,
      bounced integer NOT NULL,
      complained integer NOT NULL,
      PRIMARY KEY (workspace_id, stream, day)
    );
    CREATE TABLE IF NOT EXISTS ${s}.sending_stream_states (
      workspace_id text NOT NULL,
      stream text NOT NULL,
      paused boolean NOT NULL,
      reason text,
      paused_at timestamptz,
      locked_until timestamptz,
      resumed_at timestamptz,
      PRIMARY KEY (workspace_id, stream)
    );`,
  on: {
    EmailRecipientDelivered: (db, e: Projected<'EmailRecipientDelivered'>) =>
      count(db, e.metadata.workspaceId, e.data.stream, e.data.at, 1, 0, 0).then(() => {}),
    EmailRecipientBounced: (db, e: Projected<'EmailRecipientBounced'>) =>
      count(
        db,
        e.metadata.workspaceId,
        e.data.stream,
        e.data.at,
        sentBy(e.data),
        e.data.bounce === 'hard' ? 1 : 0,
        0,
      ).then(() => {}),
    EmailRecipientComplained: (db, e: Projected<'EmailRecipientComplained'>) =>
      count(db, e.metadata.workspaceId, e.data.stream, e.data.at, 0, 0, 1).then(() => {}),
    SendingStreamPaused: async (db, e: Projected<'SendingStreamPaused'>) => {
      const d = e.data;
      await sql`INSERT INTO sending_stream_states (workspace_id, stream, paused, reason, paused_at, locked_until)
        VALUES (${e.metadata.workspaceId}, ${d.stream}, true, ${d.reason}, ${d.pausedAt}, ${d.lockedUntil})
        ON CONFLICT (workspace_id, stream) DO UPDATE SET paused = true, reason = excluded.reason,
          paused_at = excluded.paused_at, locked_until = excluded.locked_until`.execute(db);
    },
    SendingStreamResumed: async (db, e: Projected<'SendingStreamResumed'>) => {
      const d = e.data;
      await sql`INSERT INTO sending_stream_states (workspace_id, stream, paused, resumed_at)
        VALUES (${e.metadata.workspaceId}, ${d.stream}, false, ${d.resumedAt})
        ON CONFLICT (workspace_id, stream) DO UPDATE SET paused = false, locked_until = NULL, resumed_at = excluded.resumed_at`.execute(
        db,
      );
    },
  },
});
