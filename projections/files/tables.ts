import type { Timestamp } from '../projector.ts';

/** The tables of the files read model (projector.ts). */
export interface FilesTables {
  files: {
    workspace_id: string;
    id: string;
    /** `attachment` of a received message, or `upload`. */
    source: 'attachment' | 'upload';
    /** The mailbox (an address, or `*@<domain>`); null for an upload of the whole workspace. */
    address: string | null;
    domain: string | null;
    /** Set for an attachment: the message it came in, and its place among the message's parts. */
    thread_id: string | null;
    message_id: string | null;
    part: number | null;
    filename: string | null;
    content_type: string;
    size: number;
    sha256: string;
    content_id: string | null;
    inline: boolean;
    created_at: Timestamp;
  };
}
