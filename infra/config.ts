import path from 'node:path';
import { DEFAULT_DAILY_AI_ACTIONS } from '../domain/ai-actions/decide.ts';
import { DEFAULT_MONTHLY_ALLOWANCE } from '../domain/email-quotas/decide.ts';
import { DEFAULT_TASK_LIMITS, type TaskLimits } from '../domain/tasks/decide.ts';
import type { OpenAiConfig } from './ai/openai.ts';
import { parseDnsServers } from './dns/resolver.ts';
import { DEFAULT_HEAP_GROWING_PERCENT } from './heap.ts';
import type { DeliveryConfig } from './outbound/select.ts';
import { PROVIDERS } from '../domain/provider-imports/providers.ts';
import { checkDomainName } from '../domain/domains/name.ts';
import type { ProviderConfig } from './providers/select.ts';

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
  /** `HEAP_GROWING_PERCENT` (50): V8's heap growth past its live set, 0 for V8's own (infra/heap.ts). */
  heapGrowingPercent: number;
  /** Outbound mail (notices); without it mail is written to `<dataDir>/outbox`. */
  smtpUrl: string | undefined;
  /** Development only: webhook receivers on `http://` and loopback or private addresses. */
  webhookAllowPrivate: boolean;
  /** Provider imports: `PROVIDER_<NAME>_URL` per provider (regional endpoints), `PROVIDER_ALLOW_PRIVATE` (development). */
  providers: ProviderConfig;
  mailFrom: string;
  /**
   * `PUBLIC_URL`: where people reach this service; links in mail (forward consent, unsubscribe)
   * start with it. https only: RFC 8058 one-click needs an https `List-Unsubscribe` link.
   */
  publicUrl: string;
  /** `DNS_SERVERS` (`host:port,...`); empty: the system resolver's servers. */
  dnsServers: string[];
  /** Hosts domains point their records at, from `MAIL_HOSTNAME` unless each is set on its own. */
  mailHosts: { mx: string; spfInclude: string; returnPath: string; tracking: string; storage: string };
  /** `SECRETS_KEY`: base64 of the 32-byte master key; without it, a key file under `dataDir`. */
  secretsKey: string | undefined;
  /**
   * Outbound mail delivery: `SMTP_RELAY_URL` (a relay for every message) or direct to MX hosts,
   * greeting as `MAIL_HOSTNAME`. `SMTP_MX_PORT` is for tests only: it points direct delivery at
   * a loopback server instead of port 25, and lets MX hosts resolve to loopback addresses.
   */
  outbound: DeliveryConfig;
  /**
   * Receiving: the inbound SMTP listener (`SMTP_PORT`, default 2525 so `npm start` needs no root;
   * 25 in production; bound to `SMTP_HOST`, default `HOST`) and its message size limit
   * (`SMTP_MAX_MESSAGE_BYTES`, default 50 MiB).
   */
  inbound: { port: number; host: string; maxMessageBytes: number };
  /**
   * SMTP submission (RFC 6409): off unless `SUBMISSION_PORT` is set (587 in production), bound
   * to `SUBMISSION_HOST` (default `HOST`); messages up to `SUBMISSION_MAX_MESSAGE_BYTES` (default
   * 15 MiB: the API's 10 MiB of attachments once base64-encoded). STARTTLS uses the PEM files
   * `SUBMISSION_TLS_KEY` and `SUBMISSION_TLS_CERT`; without them smtp-server's self-signed one.
   */
  submission: {
    port: number | null;
    host: string;
    maxMessageBytes: number;
    tls: { keyFile: string; certFile: string } | null;
  };
  /** `BLOB_S3_URL`: raw messages and attachments in an S3-compatible bucket instead of `<dataDir>/blobs`. */
  blobS3Url: string | undefined;
  /** `SPAM_FILTER_URL`: rspamd's normal worker (`http://host:11333`); without it, authentication alone. */
  spamFilterUrl: string | undefined;
  /**
   * `TEMP_MAIL_DOMAIN`: the service's disposable domain (its MX is this service's inbound listener);
   * without it POST /temp-mail/inboxes answers 409 `temp_mail_not_configured`.
   */
  tempMailDomain: string | undefined;
  /** `SEND_MONTHLY_ALLOWANCE`: live messages a workspace may send per calendar month (UTC); default 1,000,000. */
  sendMonthlyAllowance: number;
  /**
   * The AI port: an OpenAI-compatible chat-completions endpoint (`AI_BASE_URL`, `AI_API_KEY`,
   * `AI_MODEL`, all three or none; `AI_TIMEOUT_MS`, default 30 s). Without it, translation and
   * template design answer 409. The key is a secret: never logged, never in an answer.
   */
  ai: OpenAiConfig | null;
  /** `AI_DAILY_ACTIONS`: AI actions a workspace may spend per UTC day; default 1,000. */
  aiDailyActions: number;
  /**
   * `TASKS_MAX`, `TASKS_ACTIVE_MAX`, `TASK_JOBS_PER_DAY`: the plan's tasks and active tasks per
   * workspace, and its one-off jobs per UTC day; default 100, 20 and 20.
   */
  taskLimits: TaskLimits;
  /**
   * The assistant's timings, in milliseconds (`SystemOptions.tasks.runner`), only those set; the
   * runner's own defaults (processes/tasks/runner.ts) for the rest. `TASK_APPROVAL_TIMEOUT_MS`
   * (7 days): how long a call waits for a person; `TASK_START_WITHIN_MS` (1 day): a queued run not
   * started by then fails `run_expired`; `TASK_STALE_AFTER_MS` (2 minutes): a run whose job said
   * nothing for this long is taken up by another process, so it must exceed `AI_TIMEOUT_MS`.
   */
  taskRunner: { approvalTimeoutMs?: number; startWithinMs?: number; staleAfterMs?: number };
}

export function readConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = Number(env.PORT ?? 3000);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`PORT must be a TCP port, got ${env.PORT}`);
  const mailHostname = (env.MAIL_HOSTNAME || 'localhost').toLowerCase();
  const host = env.HOST ?? '127.0.0.1';
  return {
    port,
    host,
    dataDir: path.resolve(env.DATA_DIR ?? '.data'),
    databaseUrl: env.DATABASE_URL || undefined,
    natsUrl: env.NATS_URL || undefined,
    eventStoreUrl: env.EVENTSTORE_URL || undefined,
    logLevel: env.LOG_LEVEL ?? 'info',
    heapGrowingPercent: heapGrowingPercent(env.HEAP_GROWING_PERCENT),
    smtpUrl: env.SMTP_URL || undefined,
    webhookAllowPrivate: env.WEBHOOK_ALLOW_PRIVATE === 'true',
    providers: {
      baseUrls: Object.fromEntries(
        PROVIDERS.flatMap((p) => {
          const url = env[`PROVIDER_${p.toUpperCase()}_URL`];
          return url ? [[p, url]] : [];
        }),
      ),
      allowPrivate: env.PROVIDER_ALLOW_PRIVATE === 'true',
    },
    mailFrom: env.MAIL_FROM ?? 'Workspace Mail Service <no-reply@localhost>',
    publicUrl: publicUrl(env.PUBLIC_URL, mailHostname),
    dnsServers: parseDnsServers(env.DNS_SERVERS),
    mailHosts: {
      mx: env.MAIL_MX_HOST || mailHostname,
      spfInclude: env.MAIL_SPF_INCLUDE || `spf.${mailHostname}`,
      returnPath: env.MAIL_RETURN_PATH_HOST || `bounces.${mailHostname}`,
      tracking: env.MAIL_TRACKING_HOST || `track.${mailHostname}`,
      storage: env.MAIL_FILES_HOST || `files.${mailHostname}`,
    },
    secretsKey: env.SECRETS_KEY || undefined,
    outbound: {
      relayUrl: env.SMTP_RELAY_URL || undefined,
      mxPort: mxPort(env.SMTP_MX_PORT),
      mxAllowPrivate: Boolean(env.SMTP_MX_PORT),
      heloName: mailHostname,
    },
    inbound: {
      port: tcpPort('SMTP_PORT', env.SMTP_PORT, 2525),
      host: env.SMTP_HOST || host,
      maxMessageBytes: positiveInteger('SMTP_MAX_MESSAGE_BYTES', env.SMTP_MAX_MESSAGE_BYTES, 50 * 1024 * 1024),
    },
    submission: {
      port: env.SUBMISSION_PORT ? tcpPort('SUBMISSION_PORT', env.SUBMISSION_PORT, 587) : null,
      host: env.SUBMISSION_HOST || host,
      maxMessageBytes: positiveInteger(
        'SUBMISSION_MAX_MESSAGE_BYTES',
        env.SUBMISSION_MAX_MESSAGE_BYTES,
        15 * 1024 * 1024,
      ),
      tls: submissionTls(env.SUBMISSION_TLS_KEY, env.SUBMISSION_TLS_CERT),
    },
    blobS3Url: env.BLOB_S3_URL || undefined,
    spamFilterUrl: env.SPAM_FILTER_URL || undefined,
    tempMailDomain: tempMailDomain(env.TEMP_MAIL_DOMAIN),
    sendMonthlyAllowance: positiveInteger(
      'SEND_MONTHLY_ALLOWANCE',
      env.SEND_MONTHLY_ALLOWANCE,
      DEFAULT_MONTHLY_ALLOWANCE,
    ),
    ai: aiConfig(env),
    taskRunner: taskRunner(env),
    aiDailyActions: positiveInteger('AI_DAILY_ACTIONS', env.AI_DAILY_ACTIONS, DEFAULT_DAILY_AI_ACTIONS),
    taskLimits: {
      tasks: positiveInteger('TASKS_MAX', env.TASKS_MAX, DEFAULT_TASK_LIMITS.tasks),
      active: positiveInteger('TASKS_ACTIVE_MAX', env.TASKS_ACTIVE_MAX, DEFAULT_TASK_LIMITS.active),
      jobsPerDay: positiveInteger('TASK_JOBS_PER_DAY', env.TASK_JOBS_PER_DAY, DEFAULT_TASK_LIMITS.jobsPerDay),
    },
  };
}

function aiConfig(env: NodeJS.ProcessEnv): OpenAiConfig | null {
  const { AI_BASE_URL: baseUrl, AI_API_KEY: apiKey, AI_MODEL: model } = env;
  if (!baseUrl && !apiKey && !model) return null;
  // Names only: the message must not echo the key.
  if (!baseUrl || !apiKey || !model) throw new Error('AI_BASE_URL, AI_API_KEY and AI_MODEL go together');
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new Error(`AI_BASE_URL must be an http(s) URL, got ${baseUrl}`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new Error(`AI_BASE_URL must be an http(s) URL, got ${baseUrl}`);
  return {
    baseUrl: baseUrl.replace(/\/+$/, ''),
    apiKey,
    model,
    ...(env.AI_MODEL_ADVANCED ? { advancedModel: env.AI_MODEL_ADVANCED } : {}),
    timeoutMs: aiTimeoutMs(env),
  };
}

/** How long a model request may take (`AI_TIMEOUT_MS`, 30 s): the client's and the runner's bound. */
const aiTimeoutMs = (env: NodeJS.ProcessEnv) => positiveInteger('AI_TIMEOUT_MS', env.AI_TIMEOUT_MS, 30_000);

function taskRunner(env: NodeJS.ProcessEnv): Config['taskRunner'] {
  const timings = {
    approvalTimeoutMs: duration('TASK_APPROVAL_TIMEOUT_MS', env.TASK_APPROVAL_TIMEOUT_MS),
    startWithinMs: duration('TASK_START_WITHIN_MS', env.TASK_START_WITHIN_MS),
    staleAfterMs: duration('TASK_STALE_AFTER_MS', env.TASK_STALE_AFTER_MS),
  };
  // A run whose model request is still under way would be taken up by a second process, which
  // asks the model again and spends the turn's AI actions twice.
  const modelTimeoutMs = aiTimeoutMs(env);
  if (timings.staleAfterMs !== undefined && timings.staleAfterMs <= modelTimeoutMs)
    throw new Error(`TASK_STALE_AFTER_MS must exceed AI_TIMEOUT_MS (${modelTimeoutMs}), got ${timings.staleAfterMs}`);
  return Object.fromEntries(Object.entries(timings).filter(([, ms]) => ms !== undefined));
}

/**
 * Milliseconds, up to a year and a day: a due date further off is of no use to a timing here,
 * and past about 270,000 years one is no date at all.
 */
const DURATION_MAX_MS = 366 * 86_400_000;

function duration(name: string, value: string | undefined): number | undefined {
  if (!value) return undefined;
  const ms = Number(value);
  if (!Number.isSafeInteger(ms) || ms < 1 || ms > DURATION_MAX_MS)
    throw new Error(`${name} must be milliseconds from 1 to ${DURATION_MAX_MS}, got ${value}`);
  return ms;
}

function publicUrl(value: string | undefined, mailHostname: string): string {
  if (!value) return `https://${mailHostname}`;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error(`PUBLIC_URL must be an https URL, got ${value}`);
  }
  if (url.protocol !== 'https:') throw new Error(`PUBLIC_URL must be an https URL, got ${value}`);
  return value.replace(/\/+$/, '');
}

function tcpPort(name: string, value: string | undefined, fallback: number): number {
  if (!value) return fallback;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`${name} must be a TCP port, got ${value}`);
  return port;
}

function heapGrowingPercent(value: string | undefined): number {
  if (!value) return DEFAULT_HEAP_GROWING_PERCENT;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 1000)
    throw new Error(`HEAP_GROWING_PERCENT must be an integer from 0 to 1000, got ${value}`);
  return n;
}

function positiveInteger(name: string, value: string | undefined, fallback: number): number {
  if (!value) return fallback;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, got ${value}`);
  return n;
}

function mxPort(value: string | undefined): number {
  if (!value) return 25;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    throw new Error(`SMTP_MX_PORT must be a TCP port, got ${value}`);
  return port;
}

function submissionTls(keyFile: string | undefined, certFile: string | undefined) {
  if (!keyFile && !certFile) return null;
  if (!keyFile || !certFile) throw new Error('SUBMISSION_TLS_KEY and SUBMISSION_TLS_CERT go together');
  return { keyFile, certFile };
}

/**
 * A domain as a workspace's would be checked (under a public suffix, punycode): the listener takes
 * mail only for such names (commands/threads/inbound.ts `recipientAddress`).
 */
function tempMailDomain(value: string | undefined): string | undefined {
  if (!value) return undefined;
  const checked = checkDomainName(value);
  if (!checked.ok)
    throw new Error(`TEMP_MAIL_DOMAIN must be a domain name (such as temp.example.com): ${checked.reason}`);
  return checked.domain;
}
