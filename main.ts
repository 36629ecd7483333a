import path from 'node:path';
import { readConfig } from './infra/config.ts';
import { openSystem, resolveDatabaseUrl, serve } from './system.ts';

const config = readConfig();
const database = await resolveDatabaseUrl(config);
const system = await openSystem(database.url, {
  eventStoreUrl: config.eventStoreUrl,
  natsUrl: config.natsUrl,
  smtpUrl: config.smtpUrl,
  outboxDir: path.join(config.dataDir, 'outbox'),
  webhooks: { allowPrivate: config.webhookAllowPrivate },
  webhookNotices: { from: config.mailFrom },
});
const app = await serve(system, { logger: { level: config.logLevel } });
const address = await app.listen({ port: config.port, host: config.host });
console.log(`Workspace Mail Service listening on ${address} (database: ${config.databaseUrl ? 'DATABASE_URL' : `embedded, data in ${config.dataDir}`})`);

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, async () => {
    if (stopping) return;
    stopping = true;
    await app.close();
    await system.close();
    await database.stop();
    process.exit(0);
  });
}
