import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { createWorkspace } from '../../commands/workspaces/handlers.ts';
import { openSystem, serve, type System, type SystemOptions } from '../../system.ts';
import { freshDatabase } from './database.ts';
import { TEST_SECRETS_KEY } from './secrets.ts';

export interface TestApp {
  system: System;
  app: FastifyInstance;
  url: string;
  /** A new workspace with its owner key. */
  workspace(name?: string): Promise<{ workspaceId: string; ownerUserId: string; apiKey: string }>;
  request(
    key: string | null,
    method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE',
    url: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<LightMyRequestResponse & { body: string; json: () => any }>;
}

/** The whole service on a fresh database, driven through Fastify's inject. */
export async function startTestApp(
  t: { teardown(fn: () => Promise<void> | void): void },
  options: SystemOptions = {},
): Promise<TestApp> {
  const url = await freshDatabase(t);
  // Blobs and the outbox of a test go to a folder of its own, not the checkout's `.data`.
  const dataDir = options.dataDir ?? (await mkdtemp(path.join(os.tmpdir(), 'wms-test-')));
  // Eight connections (and four for delivery) rather than 20 and 10: three test files at once, some
  // with a second process, stay well inside PostgreSQL's 100 connections.
  const system = await openSystem(url, { secretsKey: TEST_SECRETS_KEY, dataDir, poolSize: 8, ...options });
  const app = await serve(system);
  t.teardown(async () => {
    await app.close();
    await system.close();
    if (options.dataDir === undefined) await rm(dataDir, { recursive: true, force: true });
  });
  // Which operation answered each request, noted before the answer leaves (inject may resolve
  // before an onResponse hook has run).
  const routes = new Map<string, string>();
  app.addHook('onSend', async (request) => {
    if (request.routeOptions.url) routes.set(request.id, `${request.method} ${request.routeOptions.url}`);
  });
  const documented = async (response: LightMyRequestResponse): Promise<void> => {
    const route = routes.get(String(response.headers['request-id']));
    routes.delete(String(response.headers['request-id']));
    if (!route || response.statusCode < 400) return;
    // One document per test file: it is a function of the code alone.
    openApi ??= app.inject({ method: 'GET', url: '/openapi.json' }).then((r) => r.json());
    checkDocumented(await openApi, route, response);
  };
  let n = 0;
  return {
    system,
    app,
    url,
    workspace: (name) =>
      createWorkspace(system.commands, { name: name ?? `Workspace ${++n}`, ownerEmail: `owner${n}@example.com` }),
    request: async (key, method, path, body, headers = {}) => {
      const response = await app.inject({
        method,
        url: path,
        headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers },
        ...(body === undefined
          ? {}
          : typeof body === 'string'
            ? {
                payload: body,
                headers: {
                  'content-type': 'application/json',
                  ...(key ? { authorization: `Bearer ${key}` } : {}),
                  ...headers,
                },
              }
            : { payload: body as object }),
      });
      await documented(response);
      return response as any;
    },
  };
}

type OpenApi = { paths: Record<string, Record<string, { responses: Record<string, any> }>> };
let openApi: Promise<OpenApi> | null = null;

/**
 * Every error answer an HTTP test provokes through `request` must be one its operation lists in
 * /openapi.json, under that status: an operation that answers a code it does not declare (api/route.ts
 * `errors`) fails the test that found it, so the document cannot fall behind the handlers.
 */
function checkDocumented(doc: OpenApi, route: string, response: LightMyRequestResponse): void {
  const [method, url] = route.split(' ') as [string, string];
  const operation = doc.paths[url.replace(/:(\w+)/g, '{$1}')]?.[method.toLowerCase()];
  // Routes outside the api (the documents themselves, HEAD) are not described.
  if (!operation) return;
  const code = (response.json() as { error?: { code?: string } }).error?.code;
  const listed: string[] =
    operation.responses[response.statusCode]?.content?.['application/json']?.schema?.allOf?.[1]?.properties?.error
      ?.properties?.code?.enum ?? [];
  if (!code || !listed.includes(code))
    throw new Error(
      `${route} answered ${response.statusCode} ${code}, which its OpenAPI operation does not list under ${response.statusCode} ` +
        `(it lists ${listed.join(', ') || 'nothing'}): add the code to the operation's \`errors\` (api/route.ts).`,
    );
}
