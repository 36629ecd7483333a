/**
 * Test mode is a data partition of its own, as in Stripe. The resources that sends and events act
 * on (contacts, audiences, contact events, suppressions, webhook endpoints with their deliveries,
 * automations; emails and broadcasts later) carry, where other resources carry the workspace id,
 * the id of their mode's partition: the workspace id itself for live data, `<workspace id>.test`
 * for test data. Rows, stream names and event metadata all use it, so every filter on the
 * workspace id keeps the modes apart without knowing about them, and a test stream's name
 * (`ws-<workspace id>.test.…`) stays under the workspace's prefix for the audit replay.
 */
const TEST_SUFFIX = '.test';

export type Mode = 'live' | 'test';

export const partitionOf = (workspaceId: string, mode: Mode): string =>
  mode === 'live' ? workspaceId : `${workspaceId}${TEST_SUFFIX}`;

/** The workspace a partition belongs to (a workspace id is its own live partition). */
export const workspaceOfPartition = (partition: string): string =>
  partition.endsWith(TEST_SUFFIX) ? partition.slice(0, -TEST_SUFFIX.length) : partition;
