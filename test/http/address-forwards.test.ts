import t from 'tap';
import { addDomain } from '../../commands/domains/handlers.ts';
import { CONSENT_MAILS_MAX } from '../../domain/address-consents/state.ts';
import { FORWARDS_MAX } from '../../domain/addresses/decide.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { eventually } from '../support/receiver.ts';
import { startSmtpServer } from '../support/smtp.ts';

const PUBLIC = 'https://mail.example.net';
const errorOf = (res: { statusCode: number; json: () => any }) => [
  res.statusCode,
  res.json().error?.code,
  res.json().error?.param,
];

type Workspace = Awaited<ReturnType<TestApp['workspace']>>;
const domain = (h: TestApp, ws: Workspace, name: string) =>
  addDomain(
    h.system.commands,
    h.system.domains,
    { workspaceId: ws.workspaceId, kind: 'operator', id: null },
    { domain: name },
    new Date().toISOString(),
  );

async function start(t: Parameters<typeof startTestApp>[0]) {
  const smtp = await startSmtpServer(t);
  const h = await startTestApp(t, { smtpUrl: smtp.url, forwardConsent: { pollMs: 20, publicUrl: PUBLIC } });
  const ws = await h.workspace();
  await domain(h, ws, 'example.com');
  const address = async (local: string) => {
    const res = await h.request(ws.apiKey, 'POST', '/addresses', { address: `${local}@example.com` });
    if (res.statusCode !== 201) throw new Error(res.body);
    return res.json();
  };
  /** The consent links mailed to `to` so far, oldest first. */
  const links = (to: string) =>
    smtp.mails
      .filter((m) => m.to.includes(to))
      .map((m) => /https:\/\/mail\.example\.net(\/forward-consent\/\S+)/.exec(m.text)?.[1])
      .filter((l): l is string => l !== undefined);
  const mailed = (to: string, n: number) => eventually(async () => links(to).length >= n && links(to));
  return { smtp, h, ws, address, links, mailed };
}

const form = () => ({ 'content-type': 'application/x-www-form-urlencoded' });
const answer = (h: TestApp, path: string, value: string) =>
  h.app.inject({ method: 'POST', url: path, payload: `answer=${value}`, headers: form() });

t.test('forwards: pending until the destination allows it through the mailed link', async (t) => {
  const { smtp, h, ws, address, mailed, links } = await start(t);
  const a = await address('jane');
  await address('team');
  const res = await h.request(ws.apiKey, 'POST', `/addresses/${a.id}/forwards`, {
    destinations: ['Friend@Elsewhere.org', 'team@example.com', 'friend@elsewhere.org'],
  });
  t.equal(res.statusCode, 200);
  const forwards = res.json().forwards;
  t.match(forwards, [
    {
      object: 'address_forward',
      destination: 'friend@elsewhere.org',
      status: 'pending',
      enabled: true,
      keepCopy: true,
    },
    { destination: 'team@example.com', status: 'confirmed', consentRequestedAt: null },
  ]);
  t.equal(forwards.length, 2, 'a repeated destination is one forward');
  const [outside, inside] = forwards;
  t.match(outside.id, /^fwd_[0-9a-f]{24}$/);
  const [link] = await mailed('friend@elsewhere.org', 1);
  const mail = smtp.mails.find((m) => m.to.includes('friend@elsewhere.org'))!;
  t.match(mail.subject, /jane@example\.com/);
  t.notOk(
    smtp.mails.some((m) => m.to.includes('team@example.com')),
    'a destination inside the workspace gets no mail',
  );

  const shown = await h.app.inject({ method: 'GET', url: link! });
  t.equal(shown.statusCode, 200);
  t.match(shown.headers['content-type'], /text\/html/);
  t.match(shown.body, /jane@example\.com/);
  t.match(shown.body, /<html lang="en">/);
  t.match(shown.body, /name="answer" value="allow"/);
  t.equal(
    (await h.request(ws.apiKey, 'GET', `/addresses/${a.id}`)).json().forwards[0].status,
    'pending',
    'opening the link changes nothing',
  );
  t.equal((await answer(h, link!, 'maybe')).statusCode, 400, 'an answer must be allow or decline');
  const allowed = await answer(h, link!, 'allow');
  t.equal(allowed.statusCode, 200);
  t.match(allowed.body, /Forwarding allowed/);
  const after = (await h.request(ws.apiKey, 'GET', `/addresses/${a.id}`)).json().forwards[0];
  t.match(after, { status: 'confirmed', id: outside.id });
  t.type(after.answeredAt, 'string');
  t.equal((await h.app.inject({ method: 'GET', url: link! })).statusCode, 404, 'a link works once');
  t.equal((await answer(h, link!, 'decline')).statusCode, 404);

  const resend = await h.request(ws.apiKey, 'POST', `/addresses/${a.id}/forwards/${outside.id}/resend-consent`);
  t.match([resend.statusCode, resend.json().status], [200, 'confirmed'], 'a confirmed forward needs no new link');
  await new Promise((r) => setTimeout(r, 200));
  t.equal(links('friend@elsewhere.org').length, 1, 'and none was mailed');

  for (const forged of [
    '/forward-consent/nonsense',
    `${link!.slice(0, -4)}AAAA`,
    `/forward-consent/${inside.id}.x.${link!.split('.').at(-1)}`,
  ]) {
    t.equal((await h.app.inject({ method: 'GET', url: forged })).statusCode, 404, forged);
  }
});

t.test('forwards: decline, resend (the old link stops working), update, delete', async (t) => {
  const { h, ws, address, mailed } = await start(t);
  const a = await address('jane');
  const fwd = (
    await h.request(ws.apiKey, 'POST', `/addresses/${a.id}/forwards`, {
      destinations: ['x@elsewhere.org'],
      keepCopy: false,
    })
  ).json().forwards[0];
  t.equal(fwd.keepCopy, false);
  const [first] = await mailed('x@elsewhere.org', 1);
  const declined = await answer(h, first!, 'decline');
  t.match(declined.body, /declined/);
  t.equal((await h.request(ws.apiKey, 'GET', `/addresses/${a.id}`)).json().forwards[0].status, 'declined');

  const resent = await h.request(ws.apiKey, 'POST', `/addresses/${a.id}/forwards/${fwd.id}/resend-consent`);
  t.match(resent.json(), { status: 'pending', answeredAt: null });
  const [, second] = await mailed('x@elsewhere.org', 2);
  t.not(second, first);
  const third = await h.request(ws.apiKey, 'POST', `/addresses/${a.id}/forwards/${fwd.id}/resend-consent`);
  t.equal(third.statusCode, 200);
  const [, , latest] = await mailed('x@elsewhere.org', 3);
  t.equal((await h.app.inject({ method: 'GET', url: second! })).statusCode, 404, 'a resend retires the earlier link');
  t.equal((await answer(h, latest!, 'allow')).statusCode, 200);

  const paused = await h.request(ws.apiKey, 'PATCH', `/addresses/${a.id}/forwards/${fwd.id}`, { enabled: false });
  t.match(paused.json(), { id: fwd.id, enabled: false, keepCopy: false, status: 'confirmed' });
  t.equal(
    (await h.request(ws.apiKey, 'PATCH', `/addresses/${a.id}/forwards/${fwd.id}`, { keepCopy: true })).json().keepCopy,
    true,
  );
  t.same(errorOf(await h.request(ws.apiKey, 'PATCH', `/addresses/${a.id}/forwards/fwd_nope`, { enabled: true })), [
    404,
    'resource_not_found',
    'forwardId',
  ]);
  t.same(errorOf(await h.request(ws.apiKey, 'PATCH', `/addresses/${a.id}/forwards/${fwd.id}`, { status: 'x' })), [
    422,
    'unknown_parameter',
    'status',
  ]);
  t.same((await h.request(ws.apiKey, 'DELETE', `/addresses/${a.id}/forwards/${fwd.id}`)).json(), {
    object: 'address_forward',
    id: fwd.id,
    deleted: true,
  });
  t.same((await h.request(ws.apiKey, 'GET', `/addresses/${a.id}`)).json().forwards, []);
  t.same(errorOf(await h.request(ws.apiKey, 'DELETE', `/addresses/${a.id}/forwards/${fwd.id}`)), [
    404,
    'resource_not_found',
    'forwardId',
  ]);

  // A forward removed before its link was answered: the link stops working.
  const gone = (
    await h.request(ws.apiKey, 'POST', `/addresses/${a.id}/forwards`, { destinations: ['y@elsewhere.org'] })
  )
    .json()
    .forwards.find((f: { destination: string }) => f.destination === 'y@elsewhere.org');
  const [yLink] = await mailed('y@elsewhere.org', 1);
  await h.request(ws.apiKey, 'DELETE', `/addresses/${a.id}/forwards/${gone.id}`);
  t.equal((await h.app.inject({ method: 'GET', url: yLink! })).statusCode, 404);
});

t.test('forwards: refusals, ten per address, five consent mails a day per destination', async (t) => {
  const { h, ws, address } = await start(t);
  const a = await address('jane');
  const post = (id: string, body: object) => h.request(ws.apiKey, 'POST', `/addresses/${id}/forwards`, body);
  t.same(errorOf(await post(a.id, { destinations: [] })), [422, 'invalid_parameter', 'destinations']);
  t.same(errorOf(await post(a.id, { destinations: ['not an address'] })), [422, 'invalid_parameter', 'destinations.0']);
  t.same(errorOf(await post(a.id, { destinations: ['x@elsewhere.org', 'jane@example.com'] })), [
    422,
    'invalid_parameter',
    'destinations.1',
  ]);
  t.same(errorOf(await post(a.id, { destinations: ['x@elsewhere.org'], copy: true })), [
    422,
    'unknown_parameter',
    'copy',
  ]);
  t.same(
    errorOf(
      await post(a.id, { destinations: Array.from({ length: FORWARDS_MAX + 1 }, (_, i) => `f${i}@example.com`) }),
    ),
    [422, 'invalid_parameter', 'destinations'],
    'eleven in one request',
  );
  const nine = Array.from({ length: FORWARDS_MAX - 1 }, (_, i) => `f${i}@example.com`);
  t.equal((await post(a.id, { destinations: nine })).json().forwards.length, 9);
  t.same(errorOf(await post(a.id, { destinations: ['g1@example.com', 'g2@example.com'] })), [
    422,
    'workspace_limit_reached',
    'destinations',
  ]);
  t.equal((await post(a.id, { destinations: ['g1@example.com'] })).json().forwards.length, FORWARDS_MAX, 'the tenth');

  // Consent mails: five per destination in 24 hours, across addresses (and workspaces).
  const senders = await Promise.all(['s1', 's2', 's3', 's4', 's5', 's6'].map(address));
  for (const s of senders.slice(0, CONSENT_MAILS_MAX)) {
    t.equal((await post(s.id, { destinations: ['target@elsewhere.org'] })).statusCode, 200);
  }
  const refused = await post(senders[5].id, { destinations: ['ok@elsewhere.org', 'target@elsewhere.org'] });
  t.same(errorOf(refused), [429, 'forward_consent_rate_limited', 'destinations.1']);
  const wait = Number(refused.headers['retry-after']);
  t.ok(wait > 86_000 && wait <= 86_400, `Retry-After until the first mail leaves the window (${wait} s)`);
  t.same((await h.request(ws.apiKey, 'GET', `/addresses/${senders[5].id}`)).json().forwards, [], 'nothing was added');
  const fwd = (await h.request(ws.apiKey, 'GET', `/addresses/${senders[0].id}`)).json().forwards[0];
  const resend = await h.request(ws.apiKey, 'POST', `/addresses/${senders[0].id}/forwards/${fwd.id}/resend-consent`);
  t.same(errorOf(resend), [429, 'forward_consent_rate_limited', null], 'a resend counts too');
  t.ok(Number(resend.headers['retry-after']) > 0);

  const stranger = await h.workspace();
  t.same(errorOf(await h.request(stranger.apiKey, 'POST', `/addresses/${a.id}/forwards/${fwd.id}/resend-consent`)), [
    404,
    'resource_not_found',
    'id',
  ]);
  t.same(
    errorOf(await h.request(ws.apiKey, 'POST', `/addresses/${a.id}/forwards/${fwd.id}/resend-consent`)),
    [404, 'resource_not_found', 'forwardId'],
    "another address's forward",
  );
});
