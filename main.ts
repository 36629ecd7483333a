import { readFileSync } from 'node:fs';
import path from 'node:path';
import { readConfig } from './infra/config.ts';
import { boundHeapGrowth } from './infra/heap.ts';
import { openSystem, resolveDatabaseUrl, serve, startInbound, startSubmission } from './system.ts';

const config = readConfig();
boundHeapGrowth(config.heapGrowingPercent);
const database = await resolveDatabaseUrl(config);
const system = await openSystem(database.url, {
  eventStoreUrl: config.eventStoreUrl,
  natsUrl: config.natsUrl,
  smtpUrl: config.smtpUrl,
  outboxDir: path.join(config.dataDir, 'outbox'),
  webhooks: { allowPrivate: config.webhookAllowPrivate },
  providerImports: config.providers,
  webhookNotices: { from: config.mailFrom },
  secretsKey: config.secretsKey,
  dataDir: config.dataDir,
  dns: { servers: config.dnsServers },
  mailHosts: config.mailHosts,
  forwardConsent: { from: config.mailFrom, publicUrl: config.publicUrl },
  blobS3Url: config.blobS3Url,
  outbound: config.outbound,
  publicUrl: config.publicUrl,
  sending: { monthlyAllowance: config.sendMonthlyAllowance },
  ai: { endpoint: config.ai, dailyActions: config.aiDailyActions },
  tempMail: { domain: config.tempMailDomain },
  tasks: { limits: config.taskLimits, runner: config.taskRunner },
});
const app = await serve(system, { logger: { level: config.logLevel } });
const address = await app.listen({ port: config.port, host: config.host });
console.log(
  `Workspace Mail Service listening on ${address} (database: ${config.databaseUrl ? 'DATABASE_URL' : `embedded, data in ${config.dataDir}`})`,
);
const { submission: submissionConfig } = config;
const submission =
  submissionConfig.port === null
    ? null
    : await startSubmission(system, {
        port: submissionConfig.port,
        host: submissionConfig.host,
        hostname: config.outbound.heloName,
        maxMessageBytes: submissionConfig.maxMessageBytes,
        ...(submissionConfig.tls
          ? {
              tls: {
                key: readFileSync(submissionConfig.tls.keyFile),
                cert: readFileSync(submissionConfig.tls.certFile),
              },
            }
          : {}),
      });
if (submission) console.log(`SMTP submission listening on ${submissionConfig.host}:${submission.port}`);
const inbound = await startInbound(system, {
  ...config.inbound,
  hostname: config.outbound.heloName,
  spamFilterUrl: config.spamFilterUrl,
});
console.log(`SMTP (inbound mail) listening on ${config.inbound.host}:${inbound.port}`);

// Ctrl-C signals the whole process group. The embedded PostgreSQL runs in a session of its own
// (infra/embedded-postgres.ts), so it is stopped here, last: after the HTTP server has answered
// its requests and the workers have stopped.
let stopping = false;
async function shutdown(): Promise<never> {
  let code = 0;
  // A keep-alive connection whose request ends after the close began would hold it for the whole
  // keep-alive timeout: idle connections are closed as they fall idle.
  const sweep = setInterval(() => app.server.closeIdleConnections(), 100);
  try {
    await submission?.close();
    await inbound.close();
    await app.close().finally(() => clearInterval(sweep));
    await system.close();
  } catch (error) {
    console.error('shutdown:', error);
    code = 1;
  }
  await database.stop();
  process.exit(code);
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    void shutdown();
  });
}
