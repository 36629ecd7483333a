import t from 'tap';
import { errorOf } from '../support/domains.ts';
import { BREVO_KEYS, brevoData, startBrevoServer } from '../support/providers/brevo.ts';
import { startProviderImportsApp } from '../support/providers/app.ts';

// Apart from the other adapters (provider-imports-adapters.test.ts): its contacts are the most rows.
const brevoSeed = brevoData(2000, 300);
const brevo = await startBrevoServer(t, brevoSeed);
const { h, settled, suppression } = await startProviderImportsApp(t, { brevo: `${brevo.url}/v3` });

t.test('Brevo: inspect, an SMTP key, and an import of everything with a 429 in the middle', async (t) => {
  const ws = await h.workspace();
  const inspected = await h.request(ws.apiKey, 'POST', '/provider-imports/inspect', {
    provider: 'brevo',
    apiKey: BREVO_KEYS.api,
  });
  t.equal(inspected.statusCode, 200, inspected.body);
  t.same(inspected.json().resources, ['suppressions', 'audiences', 'contacts', 'templates', 'webhooks', 'domains']);
  t.match(inspected.json().counts, {
    suppressions: { count: 300, more: true },
    audiences: { count: 3, more: false },
    contacts: { count: 2000, more: true },
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
  t.same(done.report.suppressions, { imported: 300, existing: 0, failed: 0 });
  t.same(done.report.audiences, { imported: 3, existing: 0, failed: 0 });
  t.same(done.report.contacts, { imported: 2000 - unsubscribed, existing: 0, failed: 0, unsubscribed });
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
