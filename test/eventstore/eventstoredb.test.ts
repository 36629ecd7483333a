import t from 'tap';
import { EventStoreDbEventStore } from '../../infra/eventstore/eventstoredb.ts';
import { eventStoreContract } from './contract.ts';

const url = process.env.EVENTSTORE_URL;
const unreachable = url ? await probe(url) : 'unset';

if (unreachable) {
  const line = `EventStoreDB contract suite — no server at EVENTSTORE_URL (${unreachable})`;
  t.comment(`SKIPPED: ${line}`);
  t.skip(line, () => {});
} else {
  await eventStoreContract(t, 'EventStoreDB event store', async () => {
    const store = await EventStoreDbEventStore.connect(url!);
    return { store, cleanup: () => store.close() };
  });
}

/** Why the server cannot be used, or null when it answers. */
async function probe(url: string): Promise<string | null> {
  try {
    await (await EventStoreDbEventStore.connect(url)).close();
    return null;
  } catch (error) {
    const shown = url.replace(/\/\/[^@/]*@/, '//***@');
    return `${shown}: ${(error as Error).message}`;
  }
}
