import t from 'tap';
import { refusal } from '../support/refusal.ts';
import {
  covers,
  deliveryIdOf,
  subscribes,
  SUBSCRIPTION_PATTERN,
  webhookMessageOf,
} from '../../domain/webhooks/catalogue.ts';
import {
  decideAutoDisableWebhookEndpoint,
  decideCreateWebhookEndpoint,
  decideDeleteWebhookEndpoint,
  decideReplayWebhookDeliveries,
  decideRotateWebhookSecret,
  decideTestWebhookEndpoint,
  decideUpdateWebhookEndpoint,
  ENDPOINTS_MAX,
  type EndpointSettings,
} from '../../domain/webhooks/decide.ts';
import type { WebhookEvent } from '../../domain/webhooks/events.ts';
import { webhooksAggregate, type WebhooksState } from '../../domain/webhooks/state.ts';

const NOW = '2026-01-01T00:00:00.000Z';
const given = (events: WebhookEvent[]): WebhooksState =>
  events.reduce(webhooksAggregate.evolve, webhooksAggregate.initialState);
const settings = (extra: Partial<EndpointSettings> = {}): EndpointSettings => ({
  url: 'https://hooks.example.com/x',
  description: null,
  eventTypes: null,
  addressAllowlist: null,
  domainAllowlist: null,
  ...extra,
});
const created = (endpointId: string, extra: Partial<EndpointSettings> = {}): WebhookEvent => ({
  type: 'WebhookEndpointCreated',
  data: { endpointId, ...settings(extra), secret: 'whsec_x', createdAt: NOW },
});

t.test('create: normalised settings, enabled; ten endpoints at most', async (t) => {
  const events = decideCreateWebhookEndpoint(given([]), {
    endpointId: 'whe_1',
    settings: settings({ eventTypes: [], domainAllowlist: [' A.test '], addressAllowlist: ['x@a.test', 'Y@b.test'] }),
    secret: 'whsec_x',
    now: NOW,
  });
  t.match(events, [
    {
      type: 'WebhookEndpointCreated',
      data: { eventTypes: null, domainAllowlist: ['a.test'], addressAllowlist: ['y@b.test'] },
    },
  ]);
  t.equal(given(events).endpoints.get('whe_1')!.enabled, true);
  const full = given(Array.from({ length: ENDPOINTS_MAX }, (_, i) => created(`whe_${i}`)));
  t.equal(
    refusal(() =>
      decideCreateWebhookEndpoint(full, { endpointId: 'whe_new', settings: settings(), secret: 's', now: NOW }),
    ).code,
    'workspace_limit_reached',
  );
  t.same(
    decideCreateWebhookEndpoint(given([created('whe_1')]), {
      endpointId: 'whe_1',
      settings: settings(),
      secret: 's',
      now: NOW,
    }),
    [],
    'a retried create writes nothing',
  );
});

t.test('update: only what changed; enable and disable; a person disables without a reason', async (t) => {
  const s = given([created('whe_1')]);
  t.same(
    decideUpdateWebhookEndpoint(s, { endpointId: 'whe_1', settings: { url: 'https://hooks.example.com/x' }, now: NOW }),
    [],
  );
  t.match(decideUpdateWebhookEndpoint(s, { endpointId: 'whe_1', settings: { description: 'd' }, now: NOW }), [
    { type: 'WebhookEndpointUpdated', data: { description: 'd', url: 'https://hooks.example.com/x' } },
  ]);
  const off = decideUpdateWebhookEndpoint(s, { endpointId: 'whe_1', settings: {}, enabled: false, now: NOW });
  t.same(off, [{ type: 'WebhookEndpointDisabled', data: { endpointId: 'whe_1', reason: null, disabledAt: NOW } }]);
  const disabled = given([created('whe_1'), ...off]);
  t.same(
    decideUpdateWebhookEndpoint(disabled, { endpointId: 'whe_1', settings: {}, enabled: false, now: NOW }),
    [],
    'twice changes nothing',
  );
  t.same(decideUpdateWebhookEndpoint(disabled, { endpointId: 'whe_1', settings: {}, enabled: true, now: NOW }), [
    { type: 'WebhookEndpointEnabled', data: { endpointId: 'whe_1', enabledAt: NOW } },
  ]);
  t.equal(
    refusal(() => decideUpdateWebhookEndpoint(s, { endpointId: 'whe_2', settings: {}, now: NOW })).code,
    'resource_not_found',
  );
});

t.test('deliveries switch an enabled endpoint off once; test and replay need it enabled', async (t) => {
  const s = given([created('whe_1')]);
  const off = decideAutoDisableWebhookEndpoint(s, { endpointId: 'whe_1', reason: 'consecutive_failures', now: NOW });
  t.same(off, [
    { type: 'WebhookEndpointDisabled', data: { endpointId: 'whe_1', reason: 'consecutive_failures', disabledAt: NOW } },
  ]);
  const disabled = given([created('whe_1'), ...off]);
  t.same(
    decideAutoDisableWebhookEndpoint(disabled, { endpointId: 'whe_1', reason: 'gone', now: NOW }),
    [],
    'only the first report writes',
  );
  t.same(
    decideAutoDisableWebhookEndpoint(s, { endpointId: 'whe_gone', reason: 'gone', now: NOW }),
    [],
    'a deleted endpoint is left alone',
  );
  t.equal(
    refusal(() => decideTestWebhookEndpoint(disabled, { endpointId: 'whe_1', testId: 't', now: NOW })).code,
    'webhook_disabled',
  );
  t.equal(
    refusal(() =>
      decideReplayWebhookDeliveries(disabled, { endpointId: 'whe_1', deliveryIds: null, since: NOW, now: NOW }),
    ).code,
    'webhook_disabled',
  );
  t.equal(decideTestWebhookEndpoint(s, { endpointId: 'whe_1', testId: 't', now: NOW }).length, 1);
});

t.test('rotate: the previous secret expires in 24 hours; delete', async (t) => {
  const s = given([created('whe_1')]);
  t.same(decideRotateWebhookSecret(s, { endpointId: 'whe_1', secret: 'whsec_new', now: NOW }), [
    {
      type: 'WebhookSecretRotated',
      data: {
        endpointId: 'whe_1',
        secret: 'whsec_new',
        previousSecretExpiresAt: '2026-01-02T00:00:00.000Z',
        rotatedAt: NOW,
      },
    },
  ]);
  const gone = given([created('whe_1'), ...decideDeleteWebhookEndpoint(s, { endpointId: 'whe_1', now: NOW })]);
  t.equal(gone.endpoints.size, 0);
  t.equal(
    refusal(() => decideRotateWebhookSecret(gone, { endpointId: 'whe_1', secret: 'x', now: NOW })).code,
    'resource_not_found',
  );
});

t.test('subscriptions: the default set is email.* but email.replied; families and names', async (t) => {
  for (const [types, event, expected] of [
    [null, 'email.delivered', true],
    [[], 'email.delivered', true],
    [null, 'email.replied', false],
    [null, 'suppression.added', false],
    [['suppression.*'], 'suppression.added', true],
    [['suppression.added'], 'suppression.added', true],
    [['suppression.removed'], 'suppression.added', false],
    [['email.*'], 'email.replied', true],
    [['email.*'], 'suppression.added', false],
  ] as const) {
    t.equal(
      subscribes(types as string[] | null, event),
      expected,
      `${JSON.stringify(types)} hears ${event}: ${expected}`,
    );
  }
  t.ok(SUBSCRIPTION_PATTERN.test('contact.*'));
  t.notOk(SUBSCRIPTION_PATTERN.test('webhook.test'), 'only the named families');
  t.notOk(SUBSCRIPTION_PATTERN.test('*'));
});

t.test('allowlists narrow by the address or domain an event concerns', async (t) => {
  const open = { addressAllowlist: null, domainAllowlist: null };
  const narrow = { addressAllowlist: ['x@b.test'], domainAllowlist: ['a.test'] };
  t.ok(covers(open, { address: 'any@where.test' }));
  t.ok(covers(open, {}));
  t.ok(covers(narrow, { address: 'someone@a.test' }));
  t.ok(covers(narrow, { address: 'x@b.test' }));
  t.notOk(covers(narrow, { address: 'y@b.test' }));
  t.ok(covers(narrow, { domain: 'a.test' }));
  t.notOk(covers(narrow, {}), 'an event about no address reaches only unrestricted endpoints');
  t.equal(deliveryIdOf(7, 'whe_1'), deliveryIdOf(7, 'whe_1'), 'delivery ids are deterministic');
  t.not(deliveryIdOf(7, 'whe_1'), deliveryIdOf(7, 'whe_2'));
});

t.test("contact events become contact.* webhook events about the contact's address", async (t) => {
  const map = (type: string, data: Record<string, unknown>) => webhookMessageOf({ type, data }, NOW);
  const contact = { contactId: 'con_1', email: 'ann@a.test', name: 'Ann', notes: null, attributes: { plan: 'pro' } };
  t.same(map('ContactCreated', { ...contact, source: 'manual', audienceIds: ['aud_1'], createdAt: NOW }), {
    type: 'contact.created',
    concerns: { address: 'ann@a.test' },
    data: {
      id: 'con_1',
      email: 'ann@a.test',
      name: 'Ann',
      notes: null,
      attributes: { plan: 'pro' },
      source: 'manual',
      audienceIds: ['aud_1'],
      createdAt: NOW,
    },
  });
  t.same(map('ContactUpdated', { ...contact, updatedAt: NOW }), {
    type: 'contact.updated',
    concerns: { address: 'ann@a.test' },
    data: { id: 'con_1', email: 'ann@a.test', name: 'Ann', notes: null, attributes: { plan: 'pro' }, updatedAt: NOW },
  });
  t.same(map('ContactDeleted', { contactId: 'con_1', email: 'ann@a.test', deletedAt: NOW }), {
    type: 'contact.deleted',
    concerns: { address: 'ann@a.test' },
    data: { id: 'con_1', email: 'ann@a.test', deletedAt: NOW },
  });
  const unsubscribed = {
    unsubscribeId: 'uns_1',
    email: 'ann@a.test',
    contactId: 'con_1',
    audienceId: null,
    source: 'one-click' as const,
    createdAt: NOW,
  };
  t.same(map('ContactUnsubscribed', unsubscribed), {
    type: 'contact.unsubscribed',
    concerns: { address: 'ann@a.test' },
    data: {
      id: 'uns_1',
      email: 'ann@a.test',
      contactId: 'con_1',
      audienceId: null,
      source: 'one-click',
      createdAt: NOW,
    },
  });
  for (const type of ['contact.created', 'contact.updated', 'contact.deleted', 'contact.unsubscribed']) {
    t.notOk(subscribes(null, type), `the default set does not hear ${type}`);
    t.ok(subscribes(['contact.*'], type));
  }
  t.equal(
    webhookMessageOf({ type: 'ContactSeen', data: { contactId: 'con_1', email: 'ann@a.test', seenAt: NOW } }, NOW),
    null,
    'activity of a contact is no webhook event',
  );
});
