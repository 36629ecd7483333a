import type { System } from '../system.ts';

export interface HistoryFilter {
  workspaceId: string;
  /** A full stream id, or the part after `ws-<id>.` (e.g. `api-keys`). */
  stream?: string;
  type?: string;
  since?: Date;
}

/** The audit replay: a workspace's events in store order, upcast to their current shape. */
export async function printHistory(
  system: System,
  filter: HistoryFilter,
  print: (line: string) => void,
): Promise<number> {
  const prefix = `ws-${filter.workspaceId}.`;
  const stream =
    filter.stream === undefined ? undefined : filter.stream.startsWith('ws-') ? filter.stream : prefix + filter.stream;
  let after = 0;
  let printed = 0;
  for (;;) {
    const batch = await system.store.readAll({ after, limit: 1000, streamPrefix: stream ?? prefix });
    if (batch.length === 0) return printed;
    for (const e of batch) {
      if (stream !== undefined && e.streamId !== stream) continue;
      if (filter.type !== undefined && e.type !== filter.type) continue;
      if (filter.since !== undefined && e.recordedAt < filter.since) continue;
      const { data } = system.commands.registry.decode(e.type, e.version, e.data);
      if ('secretHash' in data) data.secretHash = '[redacted]';
      if ('passwordHash' in data) data.passwordHash = '[redacted]';
      if ('secret' in data) data.secret = '[redacted]';
      print(
        JSON.stringify({
          position: e.position,
          streamId: e.streamId,
          revision: e.revision,
          type: e.type,
          recordedAt: e.recordedAt.toISOString(),
          data,
          metadata: e.metadata,
        }),
      );
      printed++;
    }
    after = batch[batch.length - 1]!.position;
  }
}
