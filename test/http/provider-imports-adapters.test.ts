import t from 'tap';
import { startTestApp } from '../support/app.ts';
import { errorOf } from '../support/domains.ts';
import { BREVO_KEYS, brevoData, startBrevoServer } from '../support/providers/brevo.ts';
import { POSTMARK_TOKEN, postmarkData, startPostmarkServer } from '../support/providers/postmark.ts';
import { eventually } from '../support/receiver.ts';

const postmarkSeed = postmarkData(90, 4);
const brevoSeed = brevoData(1200, 150);
const postmark = await startPostmarkServer(t, postmarkSeed);
const brevo = await startBrevoServer(t, brevoSeed);
const h = await startTestApp(t, {
  providerImports: {
    baseUrls: { postmark: postmark.url, brevo: `${brevo.url}/v3` },
    allowPrivate: true,
    pollMs: 20,
    retryBaseMs: 50,
    retryMaxMs: 2000,
  },
});

async function settled(key: string, id: string) {
  return eventually(async () => {
    const got = (await h.request(key, 'GET', `/provider-imports/${id}`)).json();
    return ['completed', 'failed', 'cancelled'].includes(got.status) ? got : null;
  }, 180_000);
}

const suppression = async (key: string, email: string) =>
  (await h.request(key, 'GET', `/suppressions?q=${encodeURIComponent(email)}`)).json().data[0];

t.test('Postmark: inspect, refusals, and an import of suppressions, templates and webhooks', async (t) => {
  const ws = await h.workspace();
  const inspected = await h.request(ws.apiKey, 'POST', '/provider-imports/inspect', {
    provider: 'postmark',
    apiKey: POSTMARK_TOKEN,
  });
  t.equal(inspected.statusCode, 200, inspected.body);
  t.same(inspected.json().resources, ['suppressions', 'templates', 'webhooks']);
  t.match(inspected.json().counts, {
    suppressions: { count: 91, more: false },
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
  t.same(done.report.suppressions, { imported: 90, existing: 0, failed: 0 }, 'an address in two streams is one entry');
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

t.test('Brevo: inspect, an SMTP key, and an import of everything with a 429 in the middle', async (t) => {
  const ws = await h.workspace();
  const inspected = await h.request(ws.apiKey, 'POST', '/provider-imports/inspect', {
    provider: 'brevo',
    apiKey: BREVO_KEYS.api,
  });
  t.equal(inspected.statusCode, 200, inspected.body);
  t.same(inspected.json().resources, ['suppressions', 'audiences', 'contacts', 'templates', 'webhooks', 'domains']);
  t.match(inspected.json().counts, {
    suppressions: { count: 150, more: true },
    audiences: { count: 3, more: false },
    contacts: { count: 1200, more: true },
    templates: { count: 1, more: false },
    webhooks: { count: 1, more: false },
    domains: { count: 1, more: false },
    'api-keys': { count: 0, more: false },
  });
  t.ok(
    brevo.seen.every((r) => r.headers['api-key'] === BREVO_KEYS.api),
    'its own auth header',
  );
  t.same(
    errorOf(
      await h.request(ws.apiKey, 'POST', '/provider-imports/inspect', { provider: 'brevo', apiKey: BREVO_KEYS.smtp }),
    ),
    [400, 'restricted_key', 'apiKey'],
  );
  const wrong = await h.request(ws.apiKey, 'POST', '/provider-imports/inspect', {
    provider: 'brevo',
    apiKey: 'xkeysib-x',
  });
  t.same(errorOf(wrong), [400, 'provider_key_refused', 'apiKey']);
  t.match(wrong.json().error.message, /Key not found/);

  brevo.throttle(2, 1, 5);
  const made = await h.request(ws.apiKey, 'POST', '/provider-imports', {
    provider: 'brevo',
    apiKey: BREVO_KEYS.api,
    resources: ['suppressions', 'audiences', 'contacts', 'templates', 'webhooks', 'domains', 'api-keys'],
  });
  t.equal(made.statusCode, 201, made.body);
  const done = await settled(ws.apiKey, made.json().id);
  t.equal(done.status, 'completed', JSON.stringify(done));
  const unsubscribed = brevoSeed.contacts.filter((c) => c.emailBlacklisted).length;
  t.same(done.report.suppressions, { imported: 150, existing: 0, failed: 0 });
  t.same(done.report.audiences, { imported: 3, existing: 0, failed: 0 });
  t.same(done.report.contacts, { imported: 1200 - unsubscribed, existing: 0, failed: 0, unsubscribed });
  t.same(done.report.templates, { imported: 1, existing: 0, failed: 0 });
  t.same(done.report.webhooks, { imported: 1, existing: 0, failed: 0 });
  t.same(
    done.report.checklist.domains.map((d: { name: string }) => d.name),
    ['brevo-mail.example.net'],
  );
  t.same(done.report.checklist.apiKeys, [], 'Brevo lists no keys');
  t.same(done.report.errors, []);
  t.ok(
    brevo.seen.some((r) => r.path === '/v3/contacts' && r.query.get('offset') === '1000'),
    'contacts paged by offset',
  );
  t.match(await suppression(ws.apiKey, 'blocked0@brevo.test'), { reason: 'bounce', detail: /hardBounce/ });
  t.match(await suppression(ws.apiKey, 'blocked1@brevo.test'), { reason: 'complaint' });
  t.match(await suppression(ws.apiKey, 'blocked2@brevo.test'), { reason: 'manual', detail: /unsubscribedViaEmail/ });

  const audiences = (await h.request(ws.apiKey, 'GET', '/audiences?limit=100')).json().data;
  const customers = audiences.find((a: { name: string }) => a.name === 'Customers');
  const member = (await h.request(ws.apiKey, 'GET', '/contacts/member1@brevo.test')).json();
  t.match(member, { name: 'Member1 Brevo', attributes: { PLAN: 'free', SCORE: '1' } });
  t.ok(member.audienceIds.includes(customers.id), 'in the audience its list became');
  t.equal(
    (await h.request(ws.apiKey, 'GET', '/contacts/member6@brevo.test')).statusCode,
    404,
    'blacklisted: not imported',
  );
  const templates = (await h.request(ws.apiKey, 'GET', '/templates?limit=100')).json().data;
  const full = (await h.request(ws.apiKey, 'GET', `/templates/${templates[0].id}`)).json();
  t.equal(full.latest.subject, 'Hello {{contact_FIRSTNAME}}');
  t.equal(full.latest.html, '<p>Your code is {{CODE}} {{CODE}}</p>');
  const hooks = (await h.request(ws.apiKey, 'GET', '/webhooks')).json().data;
  t.same(hooks[0].eventTypes, ['email.delivered', 'email.bounced', 'email.complained']);
  t.equal(hooks[0].enabled, false);
});
