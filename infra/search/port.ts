/**
 * The words of stored messages' bodies, for search (the threads list's `q`). Kept by the blob's
 * hash beside the blob store, not in events: a body's text is the body (architecture decision
 * 12). Like a blob, an entry is never removed by the message that wrote it.
 */
export interface TextIndex {
  put(sha256: string, text: string): Promise<void>;
}
