import t from 'tap';
import { ProviderError } from '../../infra/providers/port.ts';
import { openProviderConnector } from '../../infra/providers/select.ts';
import { gather, PagesAhead, READER_WAIT_MAX_MS, READER_WAITS_MAX } from '../../processes/provider-imports/gather.ts';
import { eventually } from '../support/receiver.ts';
import { BREVO_KEYS, brevoData, startBrevoServer } from '../support/providers/brevo.ts';

// 350 blocked addresses: Brevo's pages of them hold 100 (infra/providers/brevo.ts).
const brevo = await startBrevoServer(t, brevoData(10, 350));
const connector = openProviderConnector({ baseUrls: { brevo: `${brevo.url}/v3` }, allowPrivate: true });
t.teardown(() => connector.close());
const source = connector.connect('brevo', BREVO_KEYS.api);
const blocked = Array.from({ length: 350 }, (_, i) => `blocked${i}@brevo.test`);
const ids = (items: { sourceId: string }[]) => items.map((i) => i.sourceId);
const requests = () => brevo.seen.filter((r) => r.path === '/v3/smtp/blockedContacts').length;

t.test('pages read one after another until they hold the rows a step takes', async (t) => {
  const before = requests();
  const first = await gather(source, 'suppressions', null, 250);
  t.same(ids(first.items), blocked.slice(0, 300), 'three pages of 100, in order');
  t.equal(requests() - before, 3);
  t.not(first.next, null, 'the cursor after the third page');
  const rest = await gather(source, 'suppressions', first.next, 250);
  t.same(ids(rest.items), blocked.slice(300), 'the last page, then no more');
  t.equal(rest.next, null);
  t.same(
    ids((await gather(source, 'suppressions', null, 1)).items),
    blocked.slice(0, 100),
    'one page when it is enough',
  );
});

t.test('a 429 after the first page ends the pages read; the next step asks for that page again', async (t) => {
  brevo.throttle(1, 1, 1);
  const cut = await gather(source, 'suppressions', null, 250);
  t.same(ids(cut.items), blocked.slice(0, 100), 'the first page alone');
  const rest = await gather(source, 'suppressions', cut.next, 250);
  t.same(ids(rest.items), blocked.slice(100), 'from the refused page on: nothing lost, nothing twice');
});

t.test('a refusal of the first page is the step’s', async (t) => {
  brevo.throttle(1, 1, 0);
  await t.rejects(gather(source, 'suppressions', null, 250), ProviderError);
});

t.test('pages ahead: as many steps as asked read before they are taken, in order, then nothing', async (t) => {
  const after = (await gather(source, 'suppressions', null, 100)).next!;
  const before = requests();
  const ahead = new PagesAhead(source, 'suppressions', after, 100, 2);
  await eventually(async () => requests() - before === 2);
  await new Promise((r) => setTimeout(r, 200));
  t.equal(requests() - before, 2, 'two steps ahead, not three');
  t.same(ids((await ahead.take())!.items), blocked.slice(100, 200));
  t.same(ids((await ahead.take())!.items), blocked.slice(200, 300));
  const last = (await ahead.take())!;
  t.same(ids(last.items), blocked.slice(300), 'the third, asked for once the first was taken');
  t.equal(last.next, null);
  t.equal(await ahead.take(), null, 'past the end: nothing');
  t.equal(requests() - before, 3, 'each page asked for once');

  const stopped = new PagesAhead(source, 'suppressions', after, 100, 3);
  stopped.stop();
  t.ok(await stopped.take(), 'the step asked for before the stop is answered');
  t.equal(await stopped.take(), null, 'none after it');
});

t.test('pages ahead sit out a short 429 themselves and leave a long one to the step', async (t) => {
  const after = (await gather(source, 'suppressions', null, 100)).next!;
  brevo.throttle(1, READER_WAIT_MAX_MS / 1000 + 1, 0);
  const left = new PagesAhead(source, 'suppressions', after, 100, 1);
  await t.rejects(left.take(), ProviderError, 'the step meets it, and its run waits on the schedule');
  left.stop();
  brevo.throttle(1, 1, 0);
  const started = Date.now();
  const waited = new PagesAhead(source, 'suppressions', after, 100, 1);
  t.same(ids((await waited.take())!.items), blocked.slice(100, 200), 'the page, asked again');
  t.ok(Date.now() - started >= 950, "after the reset's second");
  waited.stop();
});

t.test('pages ahead leave the step a provider that goes on refusing', async (t) => {
  const after = (await gather(source, 'suppressions', null, 100)).next!;
  const before = requests();
  brevo.throttle(READER_WAITS_MAX + 1, 1, 0);
  const ahead = new PagesAhead(source, 'suppressions', after, 100, 1);
  await t.rejects(ahead.take(), ProviderError, 'the step meets the refusal after the waits sat out');
  t.equal(requests() - before, READER_WAITS_MAX + 1, 'asked once, then once after each wait');
  ahead.stop();
});

t.test('at its documented limits, Brevo refuses the eleventh request of a second to its contacts', async (t) => {
  const paced = await startBrevoServer(t, brevoData(50, 0), { paced: true });
  const pacedConnector = openProviderConnector({ baseUrls: { brevo: `${paced.url}/v3` }, allowPrivate: true });
  t.teardown(() => pacedConnector.close());
  const client = pacedConnector.connect('brevo', BREVO_KEYS.api);
  const answers = await Promise.allSettled(Array.from({ length: 11 }, () => client.page('contacts', null)));
  t.equal(answers.filter((a) => a.status === 'fulfilled').length, 10, 'ten in the window');
  const refused = answers.find((a) => a.status === 'rejected');
  t.ok(
    refused && refused.reason instanceof ProviderError && refused.reason.kind === 'rate_limited',
    'the eleventh is rate limited',
  );
  t.ok((refused as PromiseRejectedResult).reason.retryAfterMs <= 1000, 'until the window ends');
  t.equal((await client.page('suppressions', null)).items.length, 0, 'blocked addresses have a limit of their own');
});
