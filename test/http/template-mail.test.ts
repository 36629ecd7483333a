import t from 'tap';
import { appendDecided } from '../../commands/execute.ts';
import { RECIPIENTS_MAX } from '../../domain/emails/rules.ts';
import { unsubscribeStream } from '../../domain/unsubscribes/events.ts';
import { ANALYTICS_DAYS_MAX } from '../../domain/templates/analytics.ts';
import { errorOf } from '../support/domains.ts';
import { startSendingApp, storedMessage } from '../support/emails.ts';

const blocks = (subject: string) => ({
  subject,
  document: {
    body: [
      { kind: 'Heading', text: 'Hi {{name}}', level: 2 },
      { kind: 'Text', text: 'Welcome aboard.' },
    ],
  },
  props: [{ name: 'name', type: 'string', default: 'there' }],
});

t.test('template mail', async (t) => {
  const { h, setUp, keyWith } = await startSendingApp(t);
  const { ws } = await setUp('example.com');
  const other = await setUp('example.net');
  const make = async (body: object, key = ws.apiKey) => {
    const res = await h.request(key, 'POST', '/templates', body);
    if (res.statusCode !== 201) throw new Error(res.body);
    return res.json();
  };
  const live = await make({ name: 'Welcome', publish: true, ...blocks('Hello {{name}}') });
  const base = { from: 'Jane <a@example.com>', to: 'x@example.org' };
  const sendWith = (id: string, body: object, key = ws.apiKey) => h.request(key, 'POST', `/templates/${id}/send`, body);

  t.test('send: the published version with its props; the refusals of a send', async (t) => {
    const res = await sendWith(live.id, { ...base, props: { name: 'Ann' } });
    t.equal(res.statusCode, 201, res.body);
    t.match(res.json(), { object: 'email', subject: 'Hello Ann', template: { id: live.id }, source: 'api' });
    const mail = await storedMessage(h, res.json().id, ws.workspaceId);
    t.match(mail.html, /Hi Ann/);
    t.match(mail.text, /Hi Ann/);
    const bySlug = await sendWith('welcome', { ...base, subject: 'Own subject' });
    t.equal(bySlug.statusCode, 201, bySlug.body);
    t.match(bySlug.json(), { subject: 'Own subject', template: { id: live.id } });

    const draft = await make({ name: 'Draft only', ...blocks('Draft') });
    t.same(errorOf(await sendWith(draft.id, base)), [422, 'template_not_published', 'id']);
    const old = await make({ name: 'Old one', publish: true, ...blocks('Old') });
    t.equal((await h.request(ws.apiKey, 'POST', `/templates/${old.id}/archive`)).statusCode, 200);
    t.same(errorOf(await sendWith(old.id, base)), [422, 'template_archived', 'id']);
    t.same(errorOf(await sendWith(live.id, { ...base, props: { nope: 1 } })), [
      422,
      'unknown_template_prop',
      'props.nope',
    ]);
    t.same(errorOf(await sendWith(live.id, { ...base, text: 'x' })), [422, 'unknown_parameter', 'text']);
    t.same(errorOf(await sendWith(live.id, { ...base, template: { id: live.id } })), [
      422,
      'unknown_parameter',
      'template',
    ]);
    t.same(errorOf(await sendWith(live.id, { ...base, from: 'a@example.net' })), [
      403,
      'from_address_forbidden',
      'from',
    ]);
    t.same(errorOf(await sendWith('tpl_000000000000000000000000', base)), [404, 'resource_not_found', 'id']);
    const foreign = await make({ name: 'Foreign', publish: true, ...blocks('F') }, other.ws.apiKey);
    t.same(errorOf(await sendWith(foreign.id, base)), [404, 'resource_not_found', 'id'], "another workspace's");

    const recipients = (n: number) => Array.from({ length: n }, (_, i) => `r${i}@example.org`);
    t.equal((await sendWith(live.id, { ...base, to: recipients(RECIPIENTS_MAX) })).statusCode, 201, 'at the limit');
    t.same(errorOf(await sendWith(live.id, { ...base, to: recipients(RECIPIENTS_MAX + 1) })), [
      422,
      'too_many_recipients',
      'to',
    ]);
  });

  t.test('send: scopes, narrowed keys and test keys', async (t) => {
    const reader = await keyWith(ws, { scopes: ['templates:read', 'templates:write'] });
    t.same(errorOf(await sendWith(live.id, base, reader)), [403, 'insufficient_scope', null]);
    const sender = await keyWith(ws, { scopes: ['emails:send'] });
    t.equal((await sendWith(live.id, base, sender)).statusCode, 201, 'emails:send alone is enough');
    const onB = await keyWith(ws, { scopes: ['emails:send'], addressAllowlist: ['b@example.com'] });
    t.same(errorOf(await sendWith(live.id, base, onB)), [403, 'from_address_forbidden', 'from']);
    t.equal((await sendWith(live.id, { ...base, from: 'b@example.com' }, onB)).statusCode, 201);
    const testKey = await keyWith(ws, { scopes: ['emails:send', 'emails:read'], mode: 'test' });
    const inTest = await sendWith(live.id, base, testKey);
    t.equal(inTest.statusCode, 201, inTest.body);
    t.match(inTest.json(), { mode: 'test', template: { id: live.id } });
  });

  t.test('sends: newest first, by version, paged with sends in between', async (t) => {
    const tpl = await make({ name: 'Paged', publish: true, ...blocks('Paged {{name}}') });
    const sent: string[] = [];
    const sendOne = async (body: object = base) => {
      const res = await sendWith(tpl.id, body);
      t.equal(res.statusCode, 201, res.body);
      sent.push(res.json().id);
      return res.json();
    };
    for (let i = 0; i < 3; i++) await sendOne();
    const republished = await h.request(ws.apiKey, 'PATCH', `/templates/${tpl.id}`, {
      subject: 'Second {{name}}',
      publish: true,
    });
    t.equal(republished.json().publishedVersion, 2);
    await sendOne({ ...base, from: 'b@example.com' });
    const viaEmails = await h.request(ws.apiKey, 'POST', '/emails', { ...base, template: { id: tpl.slug } });
    t.equal(viaEmails.statusCode, 201);
    sent.push(viaEmails.json().id);
    const list = (query: string, key = ws.apiKey) => h.request(key, 'GET', `/templates/${tpl.id}/sends${query}`);

    const first = await list('?limit=2');
    t.equal(first.statusCode, 200, first.body);
    t.same(
      first.json().data.map((e: { id: string }) => e.id),
      [sent[4], sent[3]],
    );
    t.equal(first.json().hasMore, true);
    t.match(first.json().data[0], {
      object: 'email',
      template: { id: tpl.id },
      recipients: [{ email: 'x@example.org' }],
    });
    const later = await sendOne();
    const rest = await list(`?limit=2&cursor=${first.json().nextCursor}`);
    const last = await list(`?limit=2&cursor=${rest.json().nextCursor}`);
    const seen = [...first.json().data, ...rest.json().data, ...last.json().data].map((e: { id: string }) => e.id);
    t.same(seen, [sent[4], sent[3], sent[2], sent[1], sent[0]], 'each once, the send in between not inside');
    t.equal(last.json().hasMore, false);
    t.equal((await list('?limit=1')).json().data[0].id, later.id, 'the new one leads a new walk');

    const v1 = await list('?version=1&limit=100');
    t.same(
      v1.json().data.map((e: { id: string }) => e.id),
      [sent[2], sent[1], sent[0]],
    );
    t.equal((await list('?version=2')).json().data.length, 3);
    t.same(errorOf(await list('?version=9')), [422, 'template_version_not_found', 'version']);
    t.same(errorOf(await list('?limit=101')), [422, 'invalid_parameter', 'limit']);
    t.same(errorOf(await list('?cursor=nope')), [400, 'invalid_cursor', 'cursor']);
    t.same(errorOf(await list(`?version=1&cursor=${first.json().nextCursor}`)), [400, 'invalid_cursor', 'cursor']);

    const onB = await keyWith(ws, { scopes: ['emails:read'], addressAllowlist: ['b@example.com'] });
    t.same(
      (await list('', onB)).json().data.map((e: { id: string }) => e.id),
      [sent[3]],
      'a narrowed key sees the mail of what it reaches',
    );
    const testKey = await keyWith(ws, { scopes: ['emails:read', 'emails:send'], mode: 'test' });
    t.same((await list('', testKey)).json().data, [], 'test mode holds none of them');
    const inTest = await sendWith(tpl.id, base, testKey);
    t.same(
      (await list('', testKey)).json().data.map((e: { id: string }) => e.id),
      [inTest.json().id],
    );
    const reader = await keyWith(ws, { scopes: ['templates:read'] });
    t.same(errorOf(await list('', reader)), [403, 'insufficient_scope', null]);
    t.same(errorOf(await list('', other.ws.apiKey)), [404, 'resource_not_found', 'id'], "another workspace's");
  });

  t.test('analytics: per version and day, from the sending events', async (t) => {
    const tpl = await make({ name: 'Measured', publish: true, ...blocks('Measured {{name}}') });
    const emailStream = (id: string, partition = ws.workspaceId) => `ws-${partition}.email-${id}`;
    /** Appends what the delivery and tracking processes decide, as they decide it. */
    const appendTo = async (stream: string, events: { type: string; data: Record<string, unknown> }[]) => {
      const revision = (await h.system.store.readStream(stream)).length - 1;
      await appendDecided(
        h.system.commands,
        { workspaceId: ws.workspaceId, kind: 'system', id: null },
        stream,
        events,
        revision < 0 ? 'no_stream' : revision,
      );
    };
    const accepted = async (id: string) =>
      (await h.system.store.readStream(emailStream(id)))[0]!.data as Record<string, any>;
    const engagement = async (id: string, recipient: string) => {
      const d = await accepted(id);
      return {
        emailId: id,
        messageId: d.messageId,
        from: { addressId: d.from.addressId, domainId: d.from.domainId, email: d.from.email },
        stream: d.stream,
        recipient,
        at: new Date().toISOString(),
      };
    };
    const settled = async (id: string) => {
      for (let i = 0; i < 100; i++) {
        const status = (await h.request(ws.apiKey, 'GET', `/emails/${id}`)).json().status;
        if (status === 'delivered') return;
        await new Promise((r) => setTimeout(r, 200));
      }
      throw new Error(`${id} was not delivered`);
    };

    t.equal((await h.request(ws.apiKey, 'POST', '/suppressions', { email: 'blocked@example.org' })).statusCode, 201);
    const one = (
      await sendWith(tpl.id, { ...base, to: ['x@example.org', 'y@example.org', 'blocked@example.org'] })
    ).json();
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const gone = (await sendWith(tpl.id, { ...base, scheduledAt: later })).json();
    t.equal((await h.request(ws.apiKey, 'POST', `/emails/${gone.id}/cancel`)).statusCode, 200);
    await h.request(ws.apiKey, 'PATCH', `/templates/${tpl.id}`, { subject: 'Two {{name}}', publish: true });
    const two = (await sendWith(tpl.id, { ...base, from: 'b@example.com', to: 'z@example.org' })).json();
    const held = (await sendWith(tpl.id, { ...base, to: 'w@example.org', scheduledAt: later })).json();
    await settled(one.id);
    await settled(two.id);

    const d = await engagement(one.id, 'x@example.org');
    await appendTo(emailStream(one.id), [
      { type: 'EmailOpened', data: { ...d, userAgent: 'Mail' } },
      { type: 'EmailOpened', data: { ...d, userAgent: 'Mail' } },
      { type: 'EmailLinkClicked', data: { ...d, recipient: 'Y@example.org', userAgent: null, url: 'https://a.test/' } },
      {
        type: 'EmailRecipientComplained',
        data: { ...d, recipient: 'y@example.org', feedbackType: 'abuse' },
      },
    ]);
    const h2 = await engagement(held.id, 'w@example.org');
    await appendTo(emailStream(held.id), [
      {
        type: 'EmailRecipientBounced',
        data: {
          ...h2,
          attempt: 1,
          code: 550,
          enhancedCode: '5.1.1',
          response: '550 5.1.1 no such user',
          mx: 'mx.recipients.test',
          tls: false,
          bounce: 'hard',
        },
      },
    ]);
    await appendTo(unsubscribeStream(ws.workspaceId, 'x@example.org'), [
      {
        type: 'ContactUnsubscribed',
        data: {
          unsubscribeId: 'unsub_analytics',
          email: 'x@example.org',
          contactId: null,
          audienceId: null,
          source: 'one-click',
          createdAt: new Date().toISOString(),
          emailId: one.id,
        },
      },
    ]);

    const today = new Date().toISOString().slice(0, 10);
    const analytics = (query = '', key = ws.apiKey) => h.request(key, 'GET', `/templates/${tpl.id}/analytics${query}`);
    const res = await analytics();
    t.equal(res.statusCode, 200, res.body);
    const body = res.json();
    t.match(body, {
      object: 'template_analytics',
      templateId: tpl.id,
      to: today,
      totals: { sent: 4, delivered: 3, bounced: 1, complained: 1, opened: 2, clicked: 1, unsubscribed: 1 },
    });
    t.same(body.totals.rates, {
      delivered: 0.75,
      bounced: 0.25,
      complained: 0.3333,
      opened: 0.6667,
      clicked: 0.3333,
      unsubscribed: 0.3333,
    });
    t.same(
      body.versions.map((v: any) => [v.version, v.totals.sent, v.days.map((x: any) => [x.date, x.sent])]),
      [
        [2, 2, [[today, 2]]],
        [1, 2, [[today, 2]]],
      ],
      'per version, newest first; suppressed and cancelled recipients not sent',
    );
    t.match(body.versions[1].totals, { delivered: 2, opened: 2, clicked: 1, complained: 1, unsubscribed: 1 });
    t.match(body.versions[0].totals, { delivered: 1, bounced: 1, opened: 0, rates: { opened: 0, bounced: 0.5 } });

    const v1 = (await analytics('?version=1')).json();
    t.same(
      v1.versions.map((v: any) => v.version),
      [1],
    );
    t.equal(v1.totals.sent, 2);
    t.same(errorOf(await analytics('?version=9')), [422, 'template_version_not_found', 'version']);

    const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
    const before = (await analytics(`?from=${day(-3)}&to=${day(-1)}`)).json();
    t.match(before, { from: day(-3), to: day(-1), totals: { sent: 0, rates: { delivered: null } }, versions: [] });
    t.equal((await analytics(`?from=${day(-(ANALYTICS_DAYS_MAX - 1))}&to=${today}`)).json().totals.sent, 4, '366 days');
    t.same(errorOf(await analytics(`?from=${day(-ANALYTICS_DAYS_MAX)}&to=${today}`)), [
      422,
      'invalid_parameter',
      'from',
    ]);
    t.same(errorOf(await analytics(`?from=${day(1)}&to=${today}`)), [422, 'invalid_parameter', 'from']);
    t.same(errorOf(await analytics('?from=2026-02-30')), [422, 'invalid_parameter', 'from']);
    t.same(errorOf(await analytics('?limit=5')), [422, 'unknown_parameter', 'limit']);

    const onB = await keyWith(ws, { scopes: ['templates:read'], addressAllowlist: ['b@example.com'] });
    t.equal((await analytics('', onB)).json().totals.sent, 1, 'a narrowed key counts the mail of what it reaches');
    const testKey = await keyWith(ws, { scopes: ['templates:read'], mode: 'test' });
    t.equal((await analytics('', testKey)).json().totals.sent, 0, 'test mode apart');
    const sender = await keyWith(ws, { scopes: ['emails:send', 'emails:read'] });
    t.same(errorOf(await analytics('', sender)), [403, 'insufficient_scope', null]);
    t.same(errorOf(await analytics('', other.ws.apiKey)), [404, 'resource_not_found', 'id'], "another workspace's");
  });
});
