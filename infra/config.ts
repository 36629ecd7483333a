import path from 'node:path';

/** Everything the process reads from its environment, read once at start-up. */
export interface Config {
  port: number;
  host: string;
  dataDir: string;
  /** External PostgreSQL; when absent the embedded one under `dataDir` is used. */
  databaseUrl: string | undefined;
  natsUrl: string | undefined;
  eventStoreUrl: string | undefined;
  logLevel: string;
  /** Outbound mail (notices); without it mail is written to `<dataDir>/outbox`. */
  smtpUrl: string | undefined;
  /** Development only: webhook receivers on `http://` and loopback or private addresses. */
  webhookAllowPrivate: boolean;
  mailFrom: string;
}

export function readConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = Number(env.PORT ?? 3000);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`PORT must be a TCP port, got ${env.PORT}`);
  return {
    port,
    host: env.HOST ?? '127.0.0.1',
    dataDir: path.resolve(env.DATA_DIR ?? '.data'),
    databaseUrl: env.DATABASE_URL || undefined,
    natsUrl: env.NATS_URL || undefined,
    eventStoreUrl: env.EVENTSTORE_URL || undefined,
    logLevel: env.LOG_LEVEL ?? 'info',
    smtpUrl: env.SMTP_URL || undefined,
    webhookAllowPrivate: env.WEBHOOK_ALLOW_PRIVATE === 'true',
    mailFrom: env.MAIL_FROM ?? 'Workspace Mail Service <no-reply@localhost>',
  };
}
