import { webhooksStream } from '../../domain/webhooks/events.ts';
import type { EventHistory } from '../history.ts';

export interface AuditEntry {
  revision: number;
  type: string;
  at: string;
  actor: unknown;
  requestId: string | null;
  /** The event's fields, secrets left out. */
  data: Record<string, unknown>;
}

/**
 * The history of one endpoint, read from the event store (the source of truth), oldest first,
 * after `afterRevision`. Secrets never leave: only that one was set.
 */
export async function webhookAudit(
  history: EventHistory,
  workspaceId: string,
  endpointId: string,
  afterRevision: number,
  limit: number,
): Promise<AuditEntry[]> {
  const out: AuditEntry[] = [];
  for (const r of await history.store.readStream(webhooksStream(workspaceId), afterRevision + 1)) {
    const { data } = history.registry.decode(r.type, r.version, r.data);
    if (data.endpointId !== endpointId) continue;
    const { secret, endpointId: _id, ...rest } = data;
    out.push({
      revision: r.revision,
      type: r.type,
      at: r.recordedAt.toISOString(),
      actor: r.metadata.actor ?? null,
      requestId: (r.metadata.requestId as string | null) ?? null,
      data: secret === undefined ? rest : { ...rest, secretChanged: true },
    });
    if (out.length > limit) break;
  }
  return out;
}
