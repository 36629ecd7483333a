import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { readConfig } from '../infra/config.ts';
import { openSystem, resolveDatabaseUrl, serve } from '../system.ts';
import { SCHEMA_FILE, typesOf } from './typegen.ts';

/**
 * `npm run client`: writes client/schema.d.ts from the OpenAPI document. By default the document
 * is the one this checkout serves, read from the service started in-process on the configured
 * database (the embedded one when DATABASE_URL is unset, as the CLI does); `--url` reads a running
 * server's instead.
 */
async function documentOf(url: string | undefined): Promise<Record<string, unknown>> {
  if (url) {
    const response = await fetch(url);
    if (!response.ok) throw new Error(`${url} answered ${response.status}`);
    return (await response.json()) as Record<string, unknown>;
  }
  const config = readConfig();
  const database = await resolveDatabaseUrl(config);
  const system = await openSystem(database.url, { project: false, deliver: false, poolSize: 2 });
  try {
    const app = await serve(system);
    const response = await app.inject({ method: 'GET', url: '/openapi.json' });
    await app.close();
    return response.json();
  } finally {
    await system.close();
    await database.stop();
  }
}

const { values } = parseArgs({ options: { url: { type: 'string' } } });
await writeFile(SCHEMA_FILE, await typesOf(await documentOf(values.url)));
console.log(`wrote ${SCHEMA_FILE.pathname}`);
process.exit(0);
