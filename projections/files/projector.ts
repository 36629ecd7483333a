import { attachmentFileId } from '../../domain/files/events.ts';
import type { Kysely } from 'kysely';
import { defineProjector, type Projected } from '../projector.ts';
import type { FilesTables } from './tables.ts';

/**
 * Files of the workspace: the attachments of messages in threads (received and sent, gone with
 * their thread) and uploads. Rows carry the mailbox, which narrowed credentials are held to.
 */
export const filesProjector = defineProjector<FilesTables>()({
  name: 'files',
  version: 1,
  tables: ['files'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.files (
      workspace_id text NOT NULL,
      id text PRIMARY KEY,
      source text NOT NULL,
      address text,
      domain text,
      thread_id text,
      message_id text,
      part integer,
      filename text,
      content_type text NOT NULL,
      size integer NOT NULL,
      sha256 text NOT NULL,
      content_id text,
      inline boolean NOT NULL,
      created_at timestamptz NOT NULL
    );`,
  indexes: (s) => `
    CREATE INDEX IF NOT EXISTS files_list ON ${s}.files (workspace_id, created_at DESC, id DESC);
    CREATE INDEX IF NOT EXISTS files_thread ON ${s}.files (thread_id) WHERE thread_id IS NOT NULL;`,
  on: {
    MessageReceived: (db, event) => insertAttachments(db, [event]),
    MessageSent: (db, event) => insertAttachments(db, [event]),
    MessageImported: (db, event) => insertAttachments(db, [event]),
    ThreadDeleted: async (db, { data: d }) => {
      await db.deleteFrom('files').where('thread_id', '=', d.threadId).execute();
    },
    FileUploaded: async (db, { metadata: { workspaceId }, data: d }) => {
      await db
        .insertInto('files')
        .values({
          workspace_id: workspaceId,
          id: d.fileId,
          source: 'upload',
          address: d.owner?.address ?? null,
          domain: d.owner?.domain ?? null,
          thread_id: null,
          message_id: null,
          part: null,
          filename: d.filename,
          content_type: d.contentType,
          size: d.size,
          sha256: d.sha256,
          content_id: null,
          inline: false,
          created_at: d.uploadedAt,
        })
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
    },
    FileDeleted: async (db, { data: d }) => {
      await db.deleteFrom('files').where('id', '=', d.fileId).execute();
    },
  },
  // Arrivals come in runs on the inbound path: one INSERT for a run, not one per message.
  onRun: { MessageReceived: insertAttachments, MessageSent: insertAttachments, MessageImported: insertAttachments },
  // Most mail carries no attachment: its arrival needs no transaction of this read model.
  writes: (event) =>
    !(event.type === 'MessageReceived' || event.type === 'MessageSent' || event.type === 'MessageImported') ||
    event.data.summary.attachments.length > 0,
});

async function insertAttachments(
  db: Kysely<FilesTables>,
  events: Projected<'MessageReceived' | 'MessageSent' | 'MessageImported'>[],
): Promise<void> {
  const rows = events.flatMap(({ metadata: { workspaceId }, data: d }) =>
    d.summary.attachments.map((a, part) => ({
      workspace_id: workspaceId,
      id: attachmentFileId(d.messageId, part),
      source: 'attachment' as const,
      address: d.mailbox.address,
      domain: d.mailbox.domain,
      thread_id: d.threadId,
      message_id: d.messageId,
      part,
      filename: a.filename,
      content_type: a.contentType,
      size: a.size,
      sha256: a.sha256,
      content_id: a.contentId,
      inline: a.inline,
      created_at: 'receivedAt' in d ? d.receivedAt : 'sentAt' in d ? d.sentAt : d.at,
    })),
  );
  if (rows.length > 0)
    await db
      .insertInto('files')
      .values(rows)
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
}
