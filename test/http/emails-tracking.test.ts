import { DomUtils, parseDocument } from 'htmlparser2';
import { simpleParser } from 'mailparser';
import t from 'tap';
import { FAST_RETRY } from '../support/delivery.ts';
import { startSendingApp, storedMessage } from '../support/emails.ts';
import { eventually, startReceiver } from '../support/receiver.ts';

const { h, dns, mx, setUp } = await startSendingApp(t, {
  emailDelivery: { pollMs: 20, retry: FAST_RETRY },
  webhooks: { allowPrivate: true, pollMs: 20, retryScheduleMs: [50, 50] },
});
const { ws, domain } = await setUp('example.com');
const other = await setUp('example.net');
const HOST = 'links.example.com';

const HTML =
  '<html><body><p>Hello <a href="https://shop.test/offer?a=1&amp;b=2">the offer</a>, ' +
  '<a href="mailto:help@example.com">write</a>, <a href="#top">top</a>, ' +
  '<a href="https://localhost/unsubscribe/abc.def">unsubscribe</a>.</p></body></html>';

const send = async (to: string | string[], extra: object = {}) => {
  const res = await h.request(ws.apiKey, 'POST', '/emails', {
    from: 'a@example.com',
    to,
    subject: 'Tracked?',
    html: HTML,
    text: 'Hello https://shop.test/offer',
    ...extra,
  });
  if (res.statusCode !== 201) throw new Error(res.body);
  return res.json().id as string;
};

/** The message as the recipient's MX received it, parsed, and the links and images of its html. */
const received = async (recipient: string, subject = 'Tracked?') => {
  const got = await eventually(async () =>
    mx.received.find((r) => r.rcptTo.includes(recipient) && r.raw.includes(`Subject: ${subject}`)),
  );
  const mail = await simpleParser(got.raw);
  const doc = parseDocument(String(mail.html));
  return {
    mail,
    links: DomUtils.getElementsByTagName('a', doc).map((a) => a.attribs.href!),
    images: DomUtils.getElementsByTagName('img', doc).map((i) => i.attribs.src!),
  };
};

const path = (url: string) => {
  const u = new URL(url);
  t.equal(u.host, HOST, 'on the tracking host');
  return u.pathname;
};
const fetch = (url: string, userAgent = 'TestMail/1.0') =>
  h.app.inject({ method: 'GET', url: path(url), headers: { host: HOST, 'user-agent': userAgent } });
const email = async (id: string, key = ws.apiKey) => h.request(key, 'GET', `/emails/${id}`);
const engagements = (history: { type: string }[]) =>
  history.filter((e) => e.type === 'EmailOpened' || e.type === 'EmailLinkClicked');

t.test('while the tracking host is not active nothing is rewritten', async (t) => {
  const patched = await h.request(ws.apiKey, 'PATCH', `/domains/${domain.id}`, { tracking: { host: HOST } });
  t.equal(patched.json().tracking.status, 'pending', patched.body);
  const id = await send('plain@example.org', { subject: 'Not tracked' });
  const { links, images } = await received('plain@example.org', 'Not tracked');
  t.same(links, [
    'https://shop.test/offer?a=1&b=2',
    'mailto:help@example.com',
    '#top',
    'https://localhost/unsubscribe/abc.def',
  ]);
  t.same(images, [], 'no pixel');
  t.same(engagements((await email(id)).json().history), []);
});

t.test('active: links through the tracking host, a pixel; opens and clicks recorded, webhooks', async (t) => {
  dns.set(HOST, { CNAME: 'track.mail.test' });
  const verified = await h.request(ws.apiKey, 'POST', `/domains/${domain.id}/verify`);
  t.equal(verified.json().tracking.status, 'active', verified.body);
  const receiver = await startReceiver(t);
  const hook = await h.request(ws.apiKey, 'POST', '/webhooks', {
    url: `${receiver.url}/all`,
    eventTypes: ['email.opened', 'email.clicked'],
  });
  t.equal(hook.statusCode, 201, hook.body);
  const narrowed = await h.request(ws.apiKey, 'POST', '/webhooks', {
    url: `${receiver.url}/b-only`,
    eventTypes: ['email.opened', 'email.clicked'],
    addressAllowlist: ['b@example.com'],
  });
  t.equal(narrowed.statusCode, 201, narrowed.body);

  const id = await send('Reader@example.org');
  const { mail, links, images } = await received('Reader@example.org');
  t.equal(links.length, 4);
  t.match(links[0], new RegExp(`^https://${HOST}/t/c/[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$`), 'the https link');
  t.same(links.slice(1), ['mailto:help@example.com', '#top', 'https://localhost/unsubscribe/abc.def']);
  t.equal(images.length, 1);
  t.match(images[0], new RegExp(`^https://${HOST}/t/o/[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$`), 'the open pixel');
  t.equal(mail.text?.trim(), 'Hello https://shop.test/offer', 'the text part is left alone');

  const pixel = await fetch(images[0]!, 'Pixel/1.0');
  t.equal(pixel.statusCode, 200);
  t.equal(pixel.headers['content-type'], 'image/gif');
  t.match(pixel.headers['cache-control'], /no-store/);
  t.equal(pixel.rawPayload.subarray(0, 6).toString(), 'GIF89a');
  const click = await fetch(links[0]!, 'Click/2.0');
  t.equal(click.statusCode, 302);
  t.equal(click.headers.location, 'https://shop.test/offer?a=1&b=2');
  t.match(click.headers['cache-control'], /no-store/);

  const got = (await email(id)).json();
  t.match(engagements(got.history), [
    { type: 'EmailOpened', recipient: 'reader@example.org', detail: { userAgent: 'Pixel/1.0' } },
    {
      type: 'EmailLinkClicked',
      recipient: 'reader@example.org',
      detail: { userAgent: 'Click/2.0', url: 'https://shop.test/offer?a=1&b=2' },
    },
  ]);
  t.match(got, { opens: 1, clicks: 1, firstOpenedAt: String, firstClickedAt: String });
  t.match(got.recipients, [{ email: 'Reader@example.org', opens: 1, clicks: 1, firstOpenedAt: String }]);
  const firstOpen = got.firstOpenedAt;
  t.equal((await fetch(images[0]!)).statusCode, 200);
  const again = (await email(id)).json();
  t.match(again, { opens: 2, firstOpenedAt: firstOpen }, 'counted again, the first time kept');

  await eventually(async () => receiver.received.filter((r) => r.path === '/all').length >= 3);
  const bodies = receiver.received.filter((r) => r.path === '/all').map((r) => JSON.parse(r.body));
  t.match(
    bodies.find((b) => b.type === 'email.clicked'),
    {
      type: 'email.clicked',
      data: {
        id,
        from: 'a@example.com',
        recipient: 'reader@example.org',
        url: 'https://shop.test/offer?a=1&b=2',
        userAgent: 'Click/2.0',
      },
    },
  );
  t.equal(bodies.filter((b) => b.type === 'email.opened').length, 2);
  t.same(
    receiver.received.filter((r) => r.path === '/b-only'),
    [],
    'an endpoint narrowed to another address hears none',
  );

  // Forged and altered tokens: the click is 404 (never a redirect), the pixel a GIF, nothing recorded.
  const clickPath = path(links[0]!);
  const [payload, mac] = clickPath.slice('/t/c/'.length).split('.') as [string, string];
  const swapped = (p: string) => p.replace('https://shop.test/offer?a=1&b=2', 'https://evil.test/phish?a=1&b=');
  const forgedPayload = Buffer.from(swapped(Buffer.from(payload, 'base64url').toString())).toString('base64url');
  const flip = (s: string) => (s[0] === 'A' ? 'B' : 'A') + s.slice(1);
  for (const token of [`${payload}.${flip(mac)}`, `${forgedPayload}.${mac}`, payload, 'x.y', `${payload}.${mac}.z`]) {
    const res = await h.app.inject({ method: 'GET', url: `/t/c/${token}`, headers: { host: HOST } });
    t.equal(res.statusCode, 404, token.slice(0, 20));
    t.notOk(res.headers.location);
  }
  const openToken = path(images[0]!).slice('/t/o/'.length);
  const [openPayload, openMac] = openToken.split('.') as [string, string];
  for (const token of [`${openPayload}.${flip(openMac)}`, 'nothing', `${payload}.${mac}`]) {
    const res = await h.app.inject({ method: 'GET', url: `/t/o/${token}`, headers: { host: HOST } });
    t.equal(res.statusCode, 200);
    t.equal(res.headers['content-type'], 'image/gif');
  }
  t.equal(
    (await h.app.inject({ method: 'GET', url: `/t/o/${openToken}`.replace('/t/o/', '/t/c/') })).statusCode,
    404,
    'an open token is no click',
  );
  const head = await h.app.inject({ method: 'HEAD', url: clickPath, headers: { host: HOST } });
  t.equal(head.statusCode, 302, 'a link checker asking HEAD is answered');
  t.match((await email(id)).json(), { opens: 2, clicks: 1 }, 'nothing more recorded');

  // Another workspace sees none of it.
  t.equal((await email(id, other.ws.apiKey)).statusCode, 404);
});

t.test('a message to several recipients counts opens and clicks on the message alone', async (t) => {
  const id = await send(['one@example.org', 'two@example.org'], { subject: 'To two' });
  const { images, links } = await received('one@example.org', 'To two');
  t.equal((await fetch(images[0]!)).statusCode, 200);
  t.equal((await fetch(links[0]!)).statusCode, 302);
  const got = (await email(id)).json();
  t.match(got, { opens: 1, clicks: 1 });
  t.match(got.recipients, [
    { email: 'one@example.org', opens: 0, clicks: 0, firstOpenedAt: null },
    { email: 'two@example.org', opens: 0, clicks: 0 },
  ]);
  t.match(engagements(got.history), [
    { type: 'EmailOpened', recipient: null },
    { type: 'EmailLinkClicked', recipient: null },
  ]);
});

t.test('a cancelled message records nothing; its valid link still redirects', async (t) => {
  const id = await send('later@example.org', {
    subject: 'Later',
    scheduledAt: new Date(Date.now() + 3_600_000).toISOString(),
  });
  const stored = await storedMessage(h, id, ws.workspaceId);
  const doc = parseDocument(String(stored.html));
  const pixel = DomUtils.getElementsByTagName('img', doc)[0]!.attribs.src!;
  const link = DomUtils.getElementsByTagName('a', doc)[0]!.attribs.href!;
  t.equal((await h.request(ws.apiKey, 'POST', `/emails/${id}/cancel`)).statusCode, 200);
  t.equal((await fetch(pixel)).statusCode, 200);
  const click = await fetch(link);
  t.equal(click.statusCode, 302);
  t.equal(click.headers.location, 'https://shop.test/offer?a=1&b=2');
  const got = (await email(id)).json();
  t.match(got, { status: 'cancelled', opens: 0, clicks: 0 });
  t.same(engagements(got.history), []);
});
