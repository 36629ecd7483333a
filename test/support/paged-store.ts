import type { EventStore } from '../../infra/eventstore/port.ts';

/**
 * The store with none of its optional reads (no bulk scan, count or log in place): what a rebuild
 * has of the EventStoreDB adapter, so it reads `readAll` pages and applies decoded events.
 */
export function pagedStore(store: EventStore): EventStore {
  return {
    append: (stream, events, expected) => store.append(stream, events, expected),
    appendMany: (appends) => store.appendMany(appends),
    readStream: (stream, from) => store.readStream(stream, from),
    readAll: (options) => store.readAll(options),
    headPosition: () => store.headPosition(),
    subscribeToAll: (options) => store.subscribeToAll(options),
    close: async () => {},
  };
}
