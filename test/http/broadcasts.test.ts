import t from 'tap';
import { audienceWith, broadcastTemplate, settledBroadcast } from '../support/broadcasts.ts';
import { errorOf } from '../support/domains.ts';
import { startSendingApp, storedMessage } from '../support/emails.ts';
import { eventually } from '../support/receiver.ts';

const ONE_CLICK = 'List-Unsubscribe=One-Click';
const { h, setUp, keyWith, mx } = await startSendingApp(t, {
  broadcasts: { pollMs: 20, pageSize: 2, sendConcurrency: 2 },
  emailDelivery: { pollMs: 20 },
});
const { ws } = await setUp('example.com');
const later = () => new Date(Date.now() + 3_600_000).toISOString();

t.test('a broadcast to two audiences: once per contact, less suppressed and unsubscribed, with progress', async (t) => {
  const tpl = await broadcastTemplate(h, ws.apiKey, 'Monthly News');
  const news = await audienceWith(h, ws.apiKey, 'News', ['ann@example.org', 'bo@example.org', 'cy@example.org']);
  const vip = await audienceWith(h, ws.apiKey, 'VIP', ['dee@example.org', 'ed@example.org']);
  t.equal((await h.request(ws.apiKey, 'PUT', `/audiences/${vip.id}/contacts/ann@example.org`)).statusCode, 200);
  t.equal((await h.request(ws.apiKey, 'POST', '/suppressions', { email: 'bo@example.org' })).statusCode, 201);
  const unsub = await h.request(ws.apiKey, 'POST', '/suppressions/unsubscribes', { email: 'ed@example.org' });
  t.equal(unsub.statusCode, 201, unsub.body);

  const created = await h.request(ws.apiKey, 'POST', '/broadcasts', {
    name: 'March',
    from: 'Team <a@example.com>',
    templateId: tpl.slug,
    audienceIds: [news.id, vip.id],
  });
  t.equal(created.statusCode, 201, created.body);
  t.match(created.json(), {
    object: 'broadcast',
    id: /^bc_[0-9a-f]{24}$/,
    name: 'March',
    templateId: tpl.id,
    audienceIds: [news.id, vip.id],
    scheduledAt: null,
  });
  const b = await settledBroadcast(h, ws.apiKey, created.json().id);
  t.match(b.progress, { recipients: 3, sent: 3, failed: 0, delivered: 3, bounced: 0, unsubscribed: 0 });
  t.ok(b.startedAt && b.completedAt);

  const arrived = mx.received.filter((r) => r.raw.toString().includes('News for'));
  t.same(
    arrived.flatMap((r) => r.rcptTo).sort(),
    ['ann@example.org', 'cy@example.org', 'dee@example.org'],
    'each contact once; the suppressed and the unsubscribed none',
  );

  const { rows } = await h.system.database.pool.query<{ email_id: string; email: string; audience_id: string }>(
    'SELECT email_id, email, audience_id FROM broadcast_recipients WHERE broadcast_id = $1 ORDER BY email',
    [b.id],
  );
  t.same(
    rows.map((r) => [r.email, r.audience_id]),
    [
      ['ann@example.org', news.id],
      ['cy@example.org', news.id],
      ['dee@example.org', vip.id],
    ],
    'taken from the first audience listed that holds them',
  );
  const email = (await h.request(ws.apiKey, 'GET', `/emails/${rows[0]!.email_id}`)).json();
  t.match(email, { source: 'broadcast', stream: 'broadcast', subject: 'News for ANN' });
  const parsed = await storedMessage(h, rows[0]!.email_id, ws.workspaceId);
  t.match(parsed.text, 'Hi ANN (ann@example.org), you are on pro.');
  const line = (key: string) => (parsed.headerLines.find((l) => l.key === key)?.line ?? '').replace(/\r?\n\s*/g, '');
  t.equal(line('list-unsubscribe-post'), `List-Unsubscribe-Post: ${ONE_CLICK}`);
  const url = /<https:\/\/localhost\/unsubscribe\/([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)>/.exec(line('list-unsubscribe'));
  t.ok(url, line('list-unsubscribe'));
  t.same(
    await h.system.sending.unsubscribeLinks.read(url![1]!),
    { partition: ws.workspaceId, email: 'ann@example.org', audienceId: news.id, emailId: rows[0]!.email_id },
    'the link leaves the audience the contact was taken from, and names the message it came in',
  );

  const click = await h.app.inject({
    method: 'POST',
    url: `/unsubscribe/${url![1]}`,
    payload: ONE_CLICK,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  t.equal(click.statusCode, 200, click.body);
  await eventually(
    async () => (await h.request(ws.apiKey, 'GET', `/broadcasts/${b.id}`)).json().progress.unsubscribed === 1,
  );
  const member = (await h.request(ws.apiKey, 'GET', `/audiences/${news.id}`)).json();
  t.equal(member.contactCount, 2, 'one click left that audience');
  const analytics = (await h.request(ws.apiKey, 'GET', `/templates/${tpl.id}/analytics`)).json();
  t.match(analytics.totals, { sent: 3, unsubscribed: 1 }, "the template's analytics count the unsubscribe");

  // Opened and clicked count each recipient once, from the emails' events.
  const open = (type: 'EmailOpened' | 'EmailLinkClicked', emailId: string) =>
    h.system.store.append(
      `ws-${ws.workspaceId}.email-${emailId}`,
      [
        {
          type,
          version: 1,
          data: {
            emailId,
            messageId: 'm@example.com',
            from: { addressId: 'x', domainId: 'y', email: 'a@example.com' },
            stream: 'broadcast',
            recipient: 'ann@example.org',
            userAgent: null,
            at: new Date().toISOString(),
            ...(type === 'EmailLinkClicked' ? { url: 'https://example.com/' } : {}),
          },
          metadata: { workspaceId: ws.workspaceId },
        },
      ],
      'any',
    );
  await open('EmailOpened', rows[0]!.email_id);
  await open('EmailOpened', rows[0]!.email_id);
  await open('EmailLinkClicked', rows[1]!.email_id);
  await eventually(
    async () => (await h.request(ws.apiKey, 'GET', `/broadcasts/${b.id}`)).json().progress.clicked === 1,
  );
  t.match((await h.request(ws.apiKey, 'GET', `/broadcasts/${b.id}`)).json().progress, { opened: 1, clicked: 1 });
});

t.test('scheduled: the template is in use until the start; cancel before the start only', async (t) => {
  const tpl = await broadcastTemplate(h, ws.apiKey, 'Scheduled Letter');
  const aud = await audienceWith(h, ws.apiKey, 'Later', ['fay@example.org']);
  const created = await h.request(ws.apiKey, 'POST', '/broadcasts', {
    from: 'a@example.com',
    templateId: tpl.id,
    audienceIds: [aud.id],
    scheduledAt: later(),
  });
  t.equal(created.statusCode, 201, created.body);
  t.match(created.json(), { status: 'scheduled', name: null, progress: { recipients: null, sent: 0 } });
  const id = created.json().id;
  t.same(errorOf(await h.request(ws.apiKey, 'DELETE', `/templates/${tpl.id}`)), [409, 'template_in_use', null]);

  const cancelled = await h.request(ws.apiKey, 'POST', `/broadcasts/${id}/cancel`);
  t.equal(cancelled.statusCode, 200, cancelled.body);
  t.match(cancelled.json(), { status: 'cancelled', cancelledAt: /Z$/ });
  t.equal((await h.request(ws.apiKey, 'POST', `/broadcasts/${id}/cancel`)).json().status, 'cancelled', 'again: same');
  t.equal((await h.request(ws.apiKey, 'DELETE', `/templates/${tpl.id}`)).statusCode, 200, 'free once cancelled');
  const deleted = await h.request(ws.apiKey, 'POST', '/broadcasts', {
    from: 'a@example.com',
    templateId: tpl.id,
    audienceIds: [aud.id],
  });
  t.same(errorOf(deleted), [422, 'template_not_found', 'templateId']);

  // Started: no cancel; the template is free again.
  const tpl2 = await broadcastTemplate(h, ws.apiKey, 'Now Letter');
  const now = await h.request(ws.apiKey, 'POST', '/broadcasts', {
    from: 'a@example.com',
    templateId: tpl2.id,
    audienceIds: [aud.id],
  });
  const done = await settledBroadcast(h, ws.apiKey, now.json().id);
  t.same(errorOf(await h.request(ws.apiKey, 'POST', `/broadcasts/${done.id}/cancel`)), [
    409,
    'email_not_cancellable',
    null,
  ]);
  t.equal((await h.request(ws.apiKey, 'DELETE', `/templates/${tpl2.id}`)).statusCode, 200, 'free once started');
});

t.test('a template delete racing broadcast creates: never a broadcast of a deleted template', async (t) => {
  const aud = await audienceWith(h, ws.apiKey, 'Race', []);
  for (let round = 0; round < 3; round++) {
    const tpl = await broadcastTemplate(h, ws.apiKey, `Race ${round}`);
    const body = { from: 'a@example.com', templateId: tpl.id, audienceIds: [aud.id], scheduledAt: later() };
    const [del, ...creates] = await Promise.all([
      h.request(ws.apiKey, 'DELETE', `/templates/${tpl.id}`),
      ...Array.from({ length: 4 }, () => h.request(ws.apiKey, 'POST', '/broadcasts', body)),
    ]);
    const made = creates.filter((c) => c.statusCode === 201);
    if (del!.statusCode === 200) {
      t.same(
        creates.filter((c) => c.statusCode !== 201).map((c) => errorOf(c)),
        creates.filter((c) => c.statusCode !== 201).map(() => [422, 'template_not_found', 'templateId']),
      );
      // A create that won before the delete would have made it refuse.
      t.equal(made.length, 0, `round ${round}: deleted, so no broadcast holds it`);
    } else {
      t.same(errorOf(del!), [409, 'template_in_use', null], `round ${round}`);
      t.ok(made.length > 0);
      for (const m of made) await h.request(ws.apiKey, 'POST', `/broadcasts/${m.json().id}/cancel`);
    }
  }
});

t.test('refusals: each code with its param, and nothing stored', async (t) => {
  const tpl = await broadcastTemplate(h, ws.apiKey, 'Checks');
  const draft = await broadcastTemplate(h, ws.apiKey, 'Draft Only', false);
  const aud = await audienceWith(h, ws.apiKey, 'Checks', []);
  const body = { from: 'a@example.com', templateId: tpl.id, audienceIds: [aud.id] };
  const post = (over: object) => h.request(ws.apiKey, 'POST', '/broadcasts', { ...body, ...over });
  const before = (await h.request(ws.apiKey, 'GET', '/broadcasts?limit=100')).json().data.length;
  t.same(errorOf(await post({ from: 'not an address' })), [422, 'invalid_email_address', 'from']);
  t.same(errorOf(await post({ from: 'x@elsewhere.test' })), [403, 'from_address_forbidden', 'from']);
  t.same(errorOf(await post({ from: 'off@example.com' })), [409, 'address_disabled', 'from']);
  t.same(errorOf(await post({ templateId: 'no-such-template' })), [422, 'template_not_found', 'templateId']);
  t.same(errorOf(await post({ templateId: draft.id })), [422, 'template_not_published', 'templateId']);
  t.same(errorOf(await post({ audienceIds: [aud.id, 'aud_000000000000000000000000'] })), [
    404,
    'audience_not_found',
    'audienceIds.1',
  ]);
  t.same(errorOf(await post({ audienceIds: [] })), [422, 'invalid_parameter', 'audienceIds']);
  t.equal(errorOf(await post({ audienceIds: Array.from({ length: 26 }, () => aud.id) }))[1], 'invalid_parameter');
  t.equal(
    (await post({ audienceIds: Array.from({ length: 25 }, () => aud.id), scheduledAt: later() })).statusCode,
    201,
  );
  t.same(errorOf(await post({ name: 'x'.repeat(201) })), [422, 'invalid_parameter', 'name']);
  t.same(errorOf(await post({ scheduledAt: 'tomorrow' })), [422, 'invalid_parameter', 'scheduledAt']);
  t.same(errorOf(await post({ scheduledAt: new Date(Date.now() + 31 * 86_400_000).toISOString() })), [
    422,
    'invalid_parameter',
    'scheduledAt',
  ]);
  t.same(errorOf(await post({ extra: 1 })), [422, 'unknown_parameter', 'extra']);
  const after = (await h.request(ws.apiKey, 'GET', '/broadcasts?limit=100')).json().data.length;
  t.equal(after, before + 1, 'only the one at the edge was stored');
  t.same(errorOf(await h.request(ws.apiKey, 'GET', '/broadcasts/bc_000000000000000000000000')), [
    404,
    'resource_not_found',
    'id',
  ]);
  t.same(errorOf(await h.request(ws.apiKey, 'POST', '/broadcasts/nope/cancel')), [404, 'resource_not_found', 'id']);
});

t.test('paging, foreign workspaces, scopes, narrowed and test keys', async (t) => {
  const other = await setUp('example.net');
  const tpl = await broadcastTemplate(h, other.ws.apiKey, 'Paging');
  const aud = await audienceWith(h, other.ws.apiKey, 'Paging', []);
  const body = { from: 'a@example.net', templateId: tpl.id, audienceIds: [aud.id], scheduledAt: later() };
  const make = async () => (await h.request(other.ws.apiKey, 'POST', '/broadcasts', body)).json().id as string;
  const first = [await make(), await make(), await make()];
  const page1 = (await h.request(other.ws.apiKey, 'GET', '/broadcasts?limit=2')).json();
  t.same(
    page1.data.map((b: { id: string }) => b.id),
    [first[2], first[1]],
  );
  t.equal(page1.hasMore, true);
  const added = await make();
  const page2 = (await h.request(other.ws.apiKey, 'GET', `/broadcasts?limit=2&cursor=${page1.nextCursor}`)).json();
  t.same(
    page2.data.map((b: { id: string }) => b.id),
    [first[0]],
    'a row added between pages does not shift the walk',
  );
  t.equal(page2.hasMore, false);
  t.same(errorOf(await h.request(other.ws.apiKey, 'GET', '/broadcasts?cursor=forged')), [
    400,
    'invalid_cursor',
    'cursor',
  ]);
  t.same(errorOf(await h.request(ws.apiKey, 'GET', `/broadcasts/${added}`)), [404, 'resource_not_found', 'id']);
  t.same(errorOf(await h.request(ws.apiKey, 'POST', `/broadcasts/${added}/cancel`)), [404, 'resource_not_found', 'id']);

  const reader = await keyWith(other.ws, { scopes: ['emails:read'] });
  t.equal((await h.request(reader, 'GET', `/broadcasts/${added}`)).statusCode, 200);
  t.equal(errorOf(await h.request(reader, 'POST', '/broadcasts', body))[1], 'insufficient_scope');
  t.equal(errorOf(await h.request(reader, 'POST', `/broadcasts/${added}/cancel`))[1], 'insufficient_scope');
  const sender = await keyWith(other.ws, { scopes: ['emails:send'] });
  t.equal(errorOf(await h.request(sender, 'GET', '/broadcasts'))[1], 'insufficient_scope');

  const narrow = await keyWith(other.ws, {
    scopes: ['emails:send', 'emails:read'],
    addressAllowlist: ['a@example.net'],
  });
  for (const [method, path, b] of [
    ['GET', '/broadcasts'],
    ['GET', `/broadcasts/${added}`],
    ['POST', '/broadcasts', body],
    ['POST', `/broadcasts/${added}/cancel`],
  ] as const)
    t.same(errorOf(await h.request(narrow, method, path, b)), [422, 'capability_unsupported', 'addressAllowlist']);

  const test = await keyWith(other.ws, { scopes: ['emails:send', 'emails:read', 'audiences:write'], mode: 'test' });
  t.same(errorOf(await h.request(test, 'GET', `/broadcasts/${added}`)), [404, 'resource_not_found', 'id']);
  t.equal((await h.request(test, 'GET', '/broadcasts')).json().data.length, 0, 'live broadcasts are not test data');
  t.same(errorOf(await h.request(test, 'POST', '/broadcasts', body)), [404, 'audience_not_found', 'audienceIds.0']);
  const testAudience = (await h.request(test, 'POST', '/audiences', { name: 'Test' })).json();
  const made = await h.request(test, 'POST', '/broadcasts', { ...body, audienceIds: [testAudience.id] });
  t.equal(made.statusCode, 201, made.body);
  t.equal((await h.request(other.ws.apiKey, 'GET', `/broadcasts/${made.json().id}`)).statusCode, 404);
});
