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
  const system = await openSystem(url, { secretsKey: TEST_SECRETS_KEY, ...options });
  const app = await serve(system);
  t.teardown(async () => {
    await app.close();
    await system.close();
  });
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
      return response as any;
    },
  };
}
