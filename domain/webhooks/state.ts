import type { WebhookEvent } from './events.ts';

export interface EndpointState {
  endpointId: string;
  url: string;
  description: string | null;
  eventTypes: string[] | null;
  addressAllowlist: string[] | null;
  domainAllowlist: string[] | null;
  enabled: boolean;
  /** Set only when deliveries switched it off (100 failures, 410 Gone); null for a person's switch. */
  disabledReason: string | null;
}

export interface WebhooksState {
  endpoints: Map<string, EndpointState>;
}

export const webhooksAggregate = {
  initialState: { endpoints: new Map() } as WebhooksState,
  evolve(state: WebhooksState, event: WebhookEvent): WebhooksState {
    const endpoints = new Map(state.endpoints);
    const d = event.data;
    const current = endpoints.get(d.endpointId);
    switch (event.type) {
      case 'WebhookEndpointCreated': {
        const { url, description, eventTypes, addressAllowlist, domainAllowlist } = event.data;
        endpoints.set(d.endpointId, {
          endpointId: d.endpointId,
          url,
          description,
          eventTypes,
          addressAllowlist,
          domainAllowlist,
          enabled: true,
          disabledReason: null,
        });
        break;
      }
      case 'WebhookEndpointUpdated':
        if (current) {
          const { url, description, eventTypes, addressAllowlist, domainAllowlist } = event.data;
          endpoints.set(d.endpointId, { ...current, url, description, eventTypes, addressAllowlist, domainAllowlist });
        }
        break;
      case 'WebhookEndpointDisabled':
        if (current) endpoints.set(d.endpointId, { ...current, enabled: false, disabledReason: event.data.reason });
        break;
      case 'WebhookEndpointEnabled':
        if (current) endpoints.set(d.endpointId, { ...current, enabled: true, disabledReason: null });
        break;
      case 'WebhookEndpointDeleted':
        endpoints.delete(d.endpointId);
        break;
      case 'WebhookSecretRotated':
      case 'WebhookTestRequested':
      case 'WebhookDeliveriesReplayed':
        break;
    }
    return { endpoints };
  },
};
