import createClient, { type Client, type ClientOptions } from 'openapi-fetch';
import type { components, operations, paths } from './schema.d.ts';

export type { components, operations, paths };

/** The error envelope every failed answer carries; `code` is one of /docs/errors. */
export type ApiErrorBody = components['schemas']['Error'];

export type MailClient = Client<paths>;

/**
 * A typed client of the Workspace Mail Service: openapi-fetch over the generated types, with the
 * key sent as `Authorization: Bearer <key>`. Every call is typed by its path and method, e.g.
 * `client.POST('/templates', { body })`, and answers `{ data }` or `{ error }` (the envelope).
 */
export function createMailClient(
  options: { baseUrl: string; apiKey: string } & Omit<ClientOptions, 'baseUrl' | 'headers'>,
): MailClient {
  const { apiKey, ...rest } = options;
  return createClient<paths>({ ...rest, headers: { authorization: `Bearer ${apiKey}` } });
}
