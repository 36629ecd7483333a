import type { ImportResource, ProviderName } from '../../domain/provider-imports/providers.ts';
import type { SuppressionReason } from '../../domain/suppressions/events.ts';

/**
 * Another sending provider's API, as an import reads it: one adapter per provider (resend.ts, …)
 * speaking that provider's own paths, auth header, paging and errors, behind this one shape.
 * Every item carries the provider's own id (`sourceId`), so a re-run maps it to the same resource.
 */
export interface ProviderClient {
  readonly provider: ProviderName;
  /** The resources this provider has an API for; the others count 0 and import nothing. */
  readonly offers: readonly ImportResource[];
  /** One cheap read with the key: throws `ProviderError` `restricted` (a send-only key) or `refused`. */
  check(): Promise<void>;
  /** A first page's worth: the count, and whether more follow past it (then `count` is a lower bound). */
  count(resource: ImportResource): Promise<{ count: number; more: boolean }>;
  /** One page from `cursor` (null: the first); `next` null after the last. Cursors are the adapter's own text. */
  page(resource: ImportResource, cursor: string | null): Promise<SourcePage>;
}

export interface SourcePage {
  items: SourceItem[];
  next: string | null;
  /** Ask for `next` only after this long: the provider is still preparing it (an export job). */
  waitMs?: number;
  /**
   * Asking for `next` starts work at the provider (a new export job): never before this page's
   * checkpoint, or a crash in between would start it twice. Other pages may be read ahead.
   */
  nextStartsWork?: boolean;
}

export type SourceItem =
  | { resource: 'suppressions'; sourceId: string; email: string; reason: SuppressionReason; detail: string }
  | { resource: 'audiences'; sourceId: string; name: string; description: string | null }
  | {
      resource: 'contacts';
      /** The address, lower-cased: one person in several lists is one contact. */
      sourceId: string;
      email: string;
      name: string | null;
      attributes: Record<string, string>;
      subscribed: boolean;
      /** The provider's ids of the lists it is in. */
      audienceSourceIds: string[];
    }
  | {
      resource: 'templates';
      sourceId: string;
      name: string;
      subject: string;
      /** Already in our placeholder syntax (`{{name}}`). */
      html: string;
      variables: string[];
      /** Published or active at the provider. */
      live: boolean;
      /** What could not be converted (block helpers left as text). */
      warnings: string[];
    }
  | { resource: 'webhooks'; sourceId: string; url: string; eventTypes: string[]; description: string | null }
  | { resource: 'domains'; sourceId: string; name: string; status: string }
  | { resource: 'api-keys'; sourceId: string; name: string };

export type ProviderErrorKind =
  /** The key can only send. */
  | 'restricted'
  /** The provider does not accept the key. */
  | 'refused'
  /** 429: ask again after `retryAfterMs`. */
  | 'rate_limited'
  /** No answer, or a 5xx: worth retrying. */
  | 'unavailable'
  /** Any other refusal of one request (a 404 of a resource the account lacks, a malformed answer). */
  | 'failed';

export class ProviderError extends Error {
  constructor(
    readonly kind: ProviderErrorKind,
    message: string,
    readonly retryAfterMs: number | null = null,
  ) {
    super(message);
    this.name = 'ProviderError';
  }
}

/** Opens a client of one provider for one key; the key lives only in the client's closure. */
export type ProviderConnector = (provider: ProviderName, apiKey: string) => ProviderClient;
