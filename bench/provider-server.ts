/**
 * The loopback Brevo of the tests (test/support/providers/brevo.ts) in a process of its own, for
 * bench/provider-import.ts: seeded in memory with `contacts` contacts and `blocked` blocked
 * addresses (argv), so neither the service importing nor the client paging shares its event
 * loop; with a third argument `paced`, at Brevo's documented rate limits. Says `{url}` over IPC
 * when listening; a message closes it.
 */
import { brevoData, startBrevoServer } from '../test/support/providers/brevo.ts';

const [contacts, blocked] = process.argv.slice(2, 4).map(Number);
const teardowns: (() => Promise<void> | void)[] = [];
const server = await startBrevoServer({ teardown: (fn) => teardowns.push(fn) }, brevoData(contacts!, blocked!), {
  paced: process.argv[4] === 'paced',
});
// The test server keeps every request for the tests' assertions; a benchmark has none to make.
const seen = server.seen;
const forget = setInterval(() => seen.splice(0, seen.length), 1000);
process.send!({ url: `${server.url}/v3` });
process.once('message', async () => {
  clearInterval(forget);
  for (const fn of teardowns) await fn();
  process.disconnect();
});
