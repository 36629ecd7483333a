import type { EventRegistry } from '../domain/shared/events.ts';
import type { EventStore } from '../infra/eventstore/port.ts';

/**
 * The event store as the read side reads it for audit logs: a stream's recorded events, decoded
 * (upcast) by the registry. Read models answer lists; the store itself answers "who changed what".
 */
export interface EventHistory {
  store: Pick<EventStore, 'readStream'>;
  registry: EventRegistry;
}
