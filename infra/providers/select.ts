import type { ProviderName } from '../../domain/provider-imports/providers.ts';
import { createOutboundAgents } from '../net/outbound-url.ts';
import { KeptFiles, type ProviderHttpOptions } from './http.ts';
import type { ProviderClient, ProviderConnector } from './port.ts';
import { BREVO_BASE_URL, brevoClient } from './brevo.ts';
import { MAILGUN_BASE_URL, mailgunClient } from './mailgun.ts';
import { POSTMARK_BASE_URL, postmarkClient } from './postmark.ts';
import { RESEND_BASE_URL, resendClient } from './resend.ts';
import { SENDGRID_BASE_URL, sendgridClient } from './sendgrid.ts';

export interface ProviderConfig {
  /** Per provider, where its API is (`PROVIDER_<NAME>_URL`): a regional endpoint, or a loopback server in tests. */
  baseUrls?: Partial<Record<ProviderName, string>>;
  /** `PROVIDER_ALLOW_PRIVATE=true`: base URLs may be http:// and private addresses (development, tests). */
  allowPrivate?: boolean;
  timeoutMs?: number;
  /** 1 s: a real export takes seconds to minutes; a test's loopback one is ready at the second poll. */
  exportPollMs?: number;
}

const DEFAULT_BASE_URLS: Record<ProviderName, string> = {
  resend: RESEND_BASE_URL,
  sendgrid: SENDGRID_BASE_URL,
  postmark: POSTMARK_BASE_URL,
  mailgun: MAILGUN_BASE_URL,
  brevo: BREVO_BASE_URL,
};

const ADAPTERS: Record<ProviderName, (base: string, apiKey: string, http: ProviderHttpOptions) => ProviderClient> = {
  resend: resendClient,
  sendgrid: sendgridClient,
  postmark: postmarkClient,
  mailgun: mailgunClient,
  brevo: brevoClient,
};

/**
 * The provider port: one adapter per provider, every request through the SSRF guard's agents
 * (so a base URL pointed inside, or a name that resolves inside, is refused unless allowed).
 */
export function openProviderConnector(config: ProviderConfig = {}): { connect: ProviderConnector; close(): void } {
  const agents = createOutboundAgents({ allowPrivate: config.allowPrivate ?? false });
  const http: ProviderHttpOptions = {
    agents,
    timeoutMs: config.timeoutMs ?? 30_000,
    maxBytes: 32 * 1024 * 1024,
    kept: new KeptFiles(),
    exportPollMs: config.exportPollMs ?? 1000,
  };
  return {
    connect(provider, apiKey) {
      return ADAPTERS[provider](config.baseUrls?.[provider] ?? DEFAULT_BASE_URLS[provider], apiKey, http);
    },
    close() {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}
