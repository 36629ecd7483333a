import t from 'tap';
import { errorOf } from '../support/domains.ts';
import { MAILGUN_KEY, mailgunData, startMailgunServer } from '../support/providers/mailgun.ts';
import { POSTMARK_TOKEN, postmarkData, startPostmarkServer } from '../support/providers/postmark.ts';
import { SENDGRID_KEYS, sendgridData, startSendgridServer } from '../support/providers/sendgrid.ts';
import { startProviderImportsApp } from '../support/providers/app.ts';

const postmarkSeed = postmarkData(600, 4);
const postmark = await startPostmarkServer(t, postmarkSeed);
const mailgunSeed = mailgunData(600);
const mailgun = await startMailgunServer(t, mailgunSeed);
const sendgridSeed = sendgridData(1200);
const sendgrid = await startSendgridServer(t, sendgridSeed);
const { h, settled, suppression } = await startProviderImportsApp(t, {
  postmark: postmark.url,
  mailgun: mailgun.url,
  sendgrid: sendgrid.url,
});

t.test('Postmark: inspect, refusals, and an import of suppressions, templates and webhooks', async (t) => {
  const ws = await h.workspace();
  const inspected = await h.request(ws.apiKey, 'POST', '/provider-imports/inspect', {
    provider: 'postmark',
    apiKey: POSTMARK_TOKEN,
  });
  t.equal(inspected.statusCode, 200, inspected.body);
  t.same(inspected.json().resources, ['suppressions', 'templates', 'webhooks']);
  t.match(inspected.json().counts, {
    suppressions: { count: 601, more: false },
    templates: { count: 4, more: false },
    webhooks: { count: 1, more: false },
    contacts: { count: 0, more: false },
    domains: { count: 0, more: false },
  });
  t.ok(
    postmark.seen.every((r) => r.headers['x-postmark-server-token'] !== undefined),
    'its own auth header',
  );
  const wrong = await h.request(ws.apiKey, 'POST', '/provider-imports/inspect', {
    provider: 'postmark',
    apiKey: 'nope',
  });
  t.same(errorOf(wrong), [400, 'provider_key_refused', 'apiKey']);
  t.match(wrong.json().error.message, /Postmark refused the token: The Server Token you provided/);

  postmark.throttle(1, 1, 2);
  const made = await h.request(ws.apiKey, 'POST', '/provider-imports', {
    provider: 'postmark',
    apiKey: POSTMARK_TOKEN,
    resources: ['suppressions', 'contacts', 'templates', 'webhooks', 'domains'],
  });
  t.equal(made.statusCode, 201, made.body);
  const done = await settled(ws.apiKey, made.json().id);
  t.equal(done.status, 'completed', JSON.stringify(done));
  t.same(done.report.suppressions, { imported: 600, existing: 0, failed: 0 }, 'an address in two streams is one entry');
  t.same(done.report.contacts, { imported: 0, existing: 0, failed: 0, unsubscribed: 0 }, 'Postmark has no contacts');
  t.same(done.report.templates, { imported: 4, existing: 0, failed: 0 });
  t.same(done.report.webhooks, { imported: 1, existing: 0, failed: 0 });
  t.same(done.report.checklist.domains, []);
  t.ok(
    done.report.errors.every((e: { code: string }) => e.code === 'template_converted'),
    'the only notes: sections left as text',
  );
  t.equal(done.report.errors.length, 8, 'two per template: {{#each}} and {{/each}}');
  t.match(await suppression(ws.apiKey, 'blocked0@example.test'), { reason: 'bounce' });
  t.match(await suppression(ws.apiKey, 'blocked1@example.test'), { reason: 'complaint' });
  t.match(await suppression(ws.apiKey, 'blocked2@example.test'), { reason: 'manual' });
  const templates = (await h.request(ws.apiKey, 'GET', '/templates?limit=100')).json().data;
  const first = templates.find((x: { name: string }) => x.name === 'Postmark template 0');
  const full = (await h.request(ws.apiKey, 'GET', `/templates/${first.id}`)).json();
  t.equal(full.status, 'active');
  t.equal(full.latest.subject, 'Receipt for {{product_name}}');
  t.equal(full.latest.html, '<p>Hi {{name}}, {{#each items}}{{description}}{{/each}} {{action_url}}</p>');
  t.same(full.latest.props.map((p: { name: string }) => p.name).sort(), [
    'action_url',
    'description',
    'name',
    'product_name',
  ]);
  t.equal(
    templates.find((x: { name: string }) => x.name === 'Postmark template 1').status,
    'draft',
    'inactive: a draft',
  );
  const hooks = (await h.request(ws.apiKey, 'GET', '/webhooks')).json().data;
  t.match(hooks, [{ url: 'https://hooks.example.net/postmark', enabled: false }]);
  t.same(hooks[0].eventTypes, ['email.opened', 'email.delivered', 'email.bounced']);
});

t.test('Mailgun: inspect, and an import walking every domain with paging URLs and a 429', async (t) => {
  const ws = await h.workspace();
  const inspected = await h.request(ws.apiKey, 'POST', '/provider-imports/inspect', {
    provider: 'mailgun',
    apiKey: MAILGUN_KEY,
  });
  t.equal(inspected.statusCode, 200, inspected.body);
  t.match(inspected.json().counts, {
    suppressions: { count: 146, more: true },
    audiences: { count: 2, more: false },
    contacts: { count: 180, more: false },
    templates: { count: 1, more: false },
    webhooks: { count: 2, more: false },
    domains: { count: 2, more: false },
    'api-keys': { count: 2, more: false },
  });
  const basic = `Basic ${Buffer.from(`api:${MAILGUN_KEY}`).toString('base64')}`;
  t.ok(
    mailgun.seen.every((r) => r.headers.authorization === basic),
    'HTTP Basic api:<key>',
  );
  const wrong = await h.request(ws.apiKey, 'POST', '/provider-imports/inspect', {
    provider: 'mailgun',
    apiKey: 'key-x',
  });
  t.same(errorOf(wrong), [400, 'provider_key_refused', 'apiKey']);
  t.match(wrong.json().error.message, /Mailgun refused the key: Forbidden/);

  mailgun.throttle(1, 1, 6);
  const made = await h.request(ws.apiKey, 'POST', '/provider-imports', {
    provider: 'mailgun',
    apiKey: MAILGUN_KEY,
    resources: ['suppressions', 'audiences', 'contacts', 'templates', 'webhooks', 'domains', 'api-keys'],
  });
  t.equal(made.statusCode, 201, made.body);
  const done = await settled(ws.apiKey, made.json().id);
  t.equal(done.status, 'completed', JSON.stringify(done));
  const people = new Map<string, boolean>();
  for (const list of mailgunSeed.members.values()) for (const m of list) people.set(m.address, m.subscribed);
  const subscribed = [...people.values()].filter(Boolean).length;
  t.same(done.report.suppressions, { imported: 645, existing: 0, failed: 0 }, 'an address on both domains once');
  t.same(done.report.audiences, { imported: 2, existing: 0, failed: 0 });
  t.same(done.report.contacts, {
    imported: subscribed,
    existing: 0,
    failed: 0,
    unsubscribed: people.size - subscribed,
  });
  t.same(done.report.templates, { imported: 1, existing: 0, failed: 0 });
  t.same(done.report.webhooks, { imported: 2, existing: 0, failed: 0 });
  t.same(
    done.report.checklist.domains.map((d: { name: string; status: string }) => [d.name, d.status]),
    [
      ['mg1.example.net', 'active'],
      ['mg2.example.net', 'unverified'],
    ],
  );
  t.same(
    done.report.checklist.apiKeys.map((k: { name: string }) => k.name),
    ['Backend — admin', 'Sending — sending'],
  );
  t.same(
    done.report.errors.map((e: { code: string }) => e.code),
    ['template_converted', 'template_converted'],
  );
  t.ok(
    mailgun.seen.some((r) => r.path === '/v3/mg1.example.net/bounces' && r.query.get('page') === 'next'),
    'followed paging.next on the configured base',
  );
  t.match(await suppression(ws.apiKey, 'bounce0001@mg1.example.net'), { reason: 'bounce', detail: /550/ });
  t.match(await suppression(ws.apiKey, 'complaint0000@x.test'), { reason: 'complaint' });
  t.match(await suppression(ws.apiKey, 'unsub0003@x.test'), { reason: 'manual' });
  const audiences = (await h.request(ws.apiKey, 'GET', '/audiences?limit=100')).json().data;
  const beta = audiences.find((a: { name: string }) => a.name === 'Beta');
  const both = (await h.request(ws.apiKey, 'GET', '/contacts/sub0141@lists.test')).json();
  t.match(both, { name: 'Subscriber 141', attributes: { city: 'Lyon', age: '31' } });
  t.notOk('nested' in both.attributes, 'only plain values become attributes');
  t.ok(both.audienceIds.includes(beta.id), 'a member of two lists is in both audiences');
  t.equal(
    (await h.request(ws.apiKey, 'GET', '/contacts/sub0007@lists.test')).statusCode,
    404,
    'unsubscribed: not imported',
  );
  const templates = (await h.request(ws.apiKey, 'GET', '/templates?limit=100')).json().data;
  const full = (await h.request(ws.apiKey, 'GET', `/templates/${templates[0].id}`)).json();
  t.equal(full.latest.subject, 'Order {{order_id}} shipped');
  t.equal(full.latest.html, '<p>{{#if vip}}Dear {{name}}{{/if}} order {{order_id}} is on its way</p>');
  const hooks = (await h.request(ws.apiKey, 'GET', '/webhooks')).json().data;
  const byUrl = Object.fromEntries(hooks.map((x: { url: string; eventTypes: string[] }) => [x.url, x.eventTypes]));
  t.same(byUrl['https://hooks.example.net/mailgun'], ['email.delivered', 'email.bounced', 'email.opened']);
  t.same(byUrl['https://hooks2.example.net/mg'], ['email.opened']);
  t.ok(
    hooks.every((x: { enabled: boolean }) => !x.enabled),
    'registered switched off',
  );
});

t.test('a resource the provider keeps failing on is a report error; the others are imported', async (t) => {
  const ws = await h.workspace();
  mailgunSeed.failing.add('templates');
  t.teardown(() => mailgunSeed.failing.delete('templates'));
  const made = await h.request(ws.apiKey, 'POST', '/provider-imports', {
    provider: 'mailgun',
    apiKey: MAILGUN_KEY,
    resources: ['templates', 'webhooks'],
  });
  t.equal(made.statusCode, 201, made.body);
  const done = await settled(ws.apiKey, made.json().id);
  t.equal(done.status, 'completed');
  t.match(done.report.errors, [{ resource: 'templates', sourceId: null, code: 'provider_unavailable' }]);
  t.same(done.report.templates, { imported: 0, existing: 0, failed: 0 });
  t.same(done.report.webhooks, { imported: 2, existing: 0, failed: 0 });
  const asked = mailgun.seen.filter((r) => r.path === '/v3/mg1.example.net/templates').length;
  t.ok(asked >= 5, `asked again with backoff before giving up (${asked} times)`);
});

t.test('SendGrid: scopes, a send-only key, and an import of all it offers with a 429', async (t) => {
  const ws = await h.workspace();
  const inspect = (apiKey: string) =>
    h.request(ws.apiKey, 'POST', '/provider-imports/inspect', { provider: 'sendgrid', apiKey });
  const inspected = await inspect(SENDGRID_KEYS.full);
  t.equal(inspected.statusCode, 200, inspected.body);
  t.same(inspected.json().resources, [
    'suppressions',
    'audiences',
    'contacts',
    'templates',
    'webhooks',
    'domains',
    'api-keys',
  ]);
  t.match(inspected.json().counts, {
    suppressions: { count: 521, more: true },
    audiences: { count: 3, more: false },
    contacts: { count: 0, more: false },
    templates: { count: 1, more: false },
    webhooks: { count: 1, more: false },
    domains: { count: 1, more: false },
    'api-keys': { count: 1, more: false },
  });
  t.same(errorOf(await inspect(SENDGRID_KEYS.sendOnly)), [400, 'restricted_key', 'apiKey']);
  const wrong = await inspect('SG.wrong');
  t.same(errorOf(wrong), [400, 'provider_key_refused', 'apiKey']);
  t.match(wrong.json().error.message, /authorization required/);
  const partial = await inspect(SENDGRID_KEYS.suppressionsOnly);
  t.equal(partial.statusCode, 200, 'a key reading some resources is no refusal');
  t.match(partial.json().counts, { suppressions: { count: 521 }, templates: { count: 0, more: false } });

  sendgrid.throttle(1, 1, 4);
  const made = await h.request(ws.apiKey, 'POST', '/provider-imports', {
    provider: 'sendgrid',
    apiKey: SENDGRID_KEYS.full,
    resources: ['suppressions', 'audiences', 'contacts', 'templates', 'webhooks', 'domains', 'api-keys'],
  });
  t.equal(made.statusCode, 201, made.body);
  const done = await settled(ws.apiKey, made.json().id);
  t.equal(done.status, 'completed', JSON.stringify(done));
  t.same(done.report.suppressions, { imported: 1221, existing: 0, failed: 0 }, 'bounces past pages, blocks left out');
  t.same(done.report.audiences, { imported: 3, existing: 0, failed: 0 });
  t.same(
    done.report.contacts,
    { imported: 0, existing: 0, failed: 0, unsubscribed: 0 },
    'no contacts seeded here (provider-imports-sendgrid-contacts.test.ts)',
  );
  t.same(done.report.templates, { imported: 1, existing: 0, failed: 0 });
  t.same(done.report.webhooks, { imported: 1, existing: 0, failed: 0 });
  t.same(
    done.report.checklist.domains.map((d: { name: string }) => d.name),
    ['sg-mail.example.net'],
  );
  t.same(
    done.report.checklist.apiKeys.map((k: { name: string }) => k.name),
    ['Web app'],
  );
  t.ok(
    sendgrid.seen.some((r) => r.path === '/v3/suppression/bounces' && r.query.get('offset') === '500'),
    'offset paging',
  );
  t.match(await suppression(ws.apiKey, 'hard600@sg.test'), { reason: 'bounce' });
  t.match(await suppression(ws.apiKey, 'spam3@sg.test'), { reason: 'complaint' });
  t.match(await suppression(ws.apiKey, 'gone1@sg.test'), { reason: 'manual' });
  t.notOk(await suppression(ws.apiKey, 'blocked@sg.test'), 'a block is not a suppression');
  const templates = (await h.request(ws.apiKey, 'GET', '/templates?limit=100')).json().data;
  const full = (await h.request(ws.apiKey, 'GET', `/templates/${templates[0].id}`)).json();
  t.equal(full.status, 'active', 'its active version, published');
  t.equal(full.latest.subject, 'Thanks {{first_name}}');
  t.equal(full.latest.html, '<p>{{total}} for {{user_plan}}</p>');
  const hooks = (await h.request(ws.apiKey, 'GET', '/webhooks')).json().data;
  t.same(hooks[0].eventTypes, ['email.delivered', 'email.bounced', 'email.complained', 'email.clicked']);
  t.equal(hooks[0].enabled, false);
});
