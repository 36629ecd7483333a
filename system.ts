import { Readable } from 'node:stream';
import os from 'node:os';
import crypto from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type pg from 'pg';
import { buildServer } from './api/server.ts';
import { IDEMPOTENCY_SCHEMA, IdempotencyKeys } from './api/idempotency.ts';
import { Cursors } from './api/paging.ts';
import { RATE_LIMIT_SCHEMA, RateLimiter } from './api/plugins/rate-limit.ts';
import { REQUEST_LOG_SCHEMA, RequestLog } from './api/request-log.ts';
import { AccountCodes } from './commands/accounts/codes.ts';
import type { AccountPorts } from './commands/accounts/sign-in.ts';
import type { OAuthPorts } from './infra/oauth/port.ts';
import type { AiPorts } from './commands/ai/actions.ts';
import type { DomainPorts } from './commands/domains/handlers.ts';
import { type SendingPorts, sendEmail } from './commands/emails/handlers.ts';
import { type LoginLookup, type SubmissionLogin, submissionPorts } from './commands/emails/submission.ts';
import { RECIPIENTS_MAX } from './domain/emails/rules.ts';
import { TrackingLinks } from './commands/emails/tracking.ts';
import { UnsubscribeLinks } from './commands/unsubscribes/links.ts';
import { DEFAULT_MONTHLY_ALLOWANCE } from './domain/email-quotas/decide.ts';
import { DEFAULT_DAILY_AI_ACTIONS } from './domain/ai-actions/decide.ts';
import { DEFAULT_TASK_LIMITS, type TaskLimits } from './domain/tasks/decide.ts';
import type { OpenAiConfig } from './infra/ai/openai.ts';
import type { CommandContext } from './commands/execute.ts';
import type { MailHosts } from './domain/domains/records.ts';
import { registry } from './domain/registry.ts';
import type { BlobStore } from './infra/blobs/port.ts';
import { SmallBlobTier } from './infra/blobs/postgres.ts';
import { openBlobStore } from './infra/blobs/select.ts';
import { readConfig, type Config } from './infra/config.ts';
import { generateDkimKeyPair } from './infra/dkim/keys.ts';
import { NodeDns } from './infra/dns/resolver.ts';
import { PipelinedWrites } from './infra/pipeline.ts';
import { openDatabase, openPool, type Database } from './infra/db.ts';
import { startEmbeddedPostgres } from './infra/embedded-postgres.ts';
import { InProcessWorkQueue } from './infra/bus/in-process.ts';
import { NatsWorkQueue, type NatsWorkQueueOptions } from './infra/bus/nats.ts';
import type { WorkQueue } from './infra/bus/port.ts';
import type { EventStore } from './infra/eventstore/port.ts';
import { PostgresEventStore } from './infra/eventstore/postgres.ts';
import { SubmissionListener } from './infra/submission/listener.ts';
import { CachedDns } from './infra/dns/cache.ts';
import { InboundListener } from './infra/inbound/listener.ts';
import { parseMessage } from './infra/inbound/summary.ts';
import { PostgresTextIndex, TEXT_INDEX_SCHEMA } from './infra/search/postgres.ts';
import { RspamdFilter } from './infra/spam/rspamd.ts';
import {
  anyRoute,
  type InboundRoute,
  type MailboxPorts,
  mailboxRoute,
  type RoutedRecipient,
  routeInbound,
} from './commands/threads/inbound.ts';
import {
  arrivalKnowledge,
  findThread,
  listThreads,
  mailboxFor,
  messagesOf,
  threadingKnowledge,
  threadOfMessage,
  type ThreadRow,
} from './projections/threads/queries.ts';
import { listLabels } from './projections/threads/labels.ts';
import { audienceGrowth } from './projections/contacts/growth.ts';
import {
  allAudiences,
  type ContactRow,
  findAudience,
  findContactByEmail,
  listAudienceContacts,
  listAudiences,
  listContacts,
} from './projections/contacts/queries.ts';
import { findEmail, historyOf, listEmails, recipientsOf } from './projections/emails/queries.ts';
import { findFile, listFiles } from './projections/files/queries.ts';
import { findTemplate, findTemplateVersion, listTemplates } from './projections/templates/queries.ts';
import { viewEmail, viewHistory } from './api/routes/emails/views.ts';
import { viewAudience } from './api/routes/audiences/views.ts';
import { viewFile } from './api/routes/files/views.ts';
import { viewTemplate } from './api/routes/templates/views.ts';
import { findMember } from './projections/members/queries.ts';
import { findTask } from './projections/tasks/queries.ts';
import { findSuppressionByEmail } from './projections/suppressions/queries.ts';
import { listUnsubscribes, unsubscribesOf } from './projections/unsubscribes/queries.ts';
import { listBroadcasts } from './projections/broadcasts/queries.ts';
import { viewBroadcast } from './api/routes/broadcasts/views.ts';
import { viewLanes } from './api/routes/sending-streams/views.ts';
import { viewUnsubscribe } from './api/routes/suppressions/unsubscribes.ts';
import { viewTemplateAnalytics } from './api/routes/template-mail/analytics.ts';
import { keyAuthority } from './projections/api-keys/queries.ts';
import { KeyAdmissions } from './projections/api-keys/admission.ts';
import { isPermission, PERMISSIONS } from './domain/shared/permissions.ts';
import type { MessageSummary } from './domain/messages/summary.ts';
import type { SettableLabel } from './domain/threads/events.ts';
import type { ContactBrief, TaskToolReads } from './processes/tasks/tools.ts';
import { DEFAULT_TASK_RUNNER_OPTIONS, TaskRunner, type TaskRunnerOptions } from './processes/tasks/runner.ts';
import { DEFAULT_TASK_NOTICE_OPTIONS, TaskNoticeMailProcess } from './processes/tasks/notices.ts';
import type { OwedMailOptions } from './processes/owed-mails.ts';
import type { TemplateRenderer } from './infra/templates/port.ts';
import { createTemplateRenderer } from './infra/templates/renderer.ts';
import { sanitiseHtml } from './infra/templates/sanitise.ts';
import { openMailSender } from './infra/mail/select.ts';
import type { Delivery } from './infra/outbound/delivery.ts';
import { openDelivery, type DeliveryConfig } from './infra/outbound/select.ts';
import type { MailSender } from './infra/mail/port.ts';
import { checkReceiverUrl, createOutboundAgents } from './infra/net/outbound-url.ts';
import { composeMessage } from './infra/outbound/compose.ts';
import { loadMasterKey } from './infra/secrets/master-key.ts';
import { SecretVault } from './infra/secrets/vault.ts';
import { PostgresSignInChallenges, SIGN_IN_SCHEMA } from './infra/sign-in/postgres.ts';
import { OAUTH_SCHEMA, PostgresOAuth } from './infra/oauth/postgres.ts';
import { PostgresStepUp, STEP_UP_SCHEMA } from './infra/step-up/postgres.ts';
import type { StepUpPorts } from './commands/step-up/handlers.ts';
import { emailOfAccount, findAccountByEmail } from './projections/accounts/queries.ts';
import { projectors } from './projections/all.ts';
import { findMailbox, forwardsOf, mailboxLogin } from './projections/addresses/queries.ts';
import { mailboxTimeZone, rulesOfMailbox } from './projections/rules/queries.ts';
import type { RuleRunPorts } from './commands/rules/run.ts';
import { sendingLookups } from './projections/emails/sending.ts';
import type { ReadModels } from './projections/tables.ts';
import { reactors } from './processes/all.ts';
import {
  AutomationRunProcess,
  DEFAULT_AUTOMATION_OPTIONS,
  type AutomationRunOptions,
} from './processes/automations/worker.ts';
import { BroadcastProcess, DEFAULT_BROADCAST_OPTIONS, type BroadcastOptions } from './processes/broadcasts/worker.ts';
import { DEFAULT_TASK_SCHEDULER_OPTIONS, TaskScheduler, type TaskSchedulerOptions } from './processes/tasks/worker.ts';
import { pauseTasksPastPlan } from './processes/tasks/plan.ts';
import { DueWakeups } from './processes/due-work.ts';
import { DEFAULT_OAUTH_RETENTION_EVERY_MS, OAuthRetention } from './processes/oauth/retention.ts';
import {
  DEFAULT_PROVIDER_IMPORT_OPTIONS,
  ProviderImportProcess,
  type ProviderImportOptions,
} from './processes/provider-imports/worker.ts';
import type { ProviderImportPorts } from './commands/provider-imports/handlers.ts';
import type { MailboxImportPorts } from './commands/mailbox-imports/handlers.ts';
import { DEFAULT_EXPORT_OPTIONS, ExportProcess, type ExportOptions } from './processes/exports/worker.ts';
import {
  DEFAULT_MAILBOX_IMPORT_OPTIONS,
  MailboxImportProcess,
  type MailboxImportOptions,
} from './processes/mailbox-imports/worker.ts';
import { FileImportStorage } from './infra/imports/files.ts';
import { ArchiveReader, DEFAULT_ARCHIVE_LIMITS } from './infra/imports/archives.ts';
import type { ArchiveLimits } from './infra/imports/port.ts';
import { openProviderConnector, type ProviderConfig } from './infra/providers/select.ts';
import {
  DEFAULT_CONSENT_MAIL_OPTIONS,
  ForwardConsentMailProcess,
  type ConsentMailOptions,
} from './processes/addresses/consent-mail.ts';
import {
  DEFAULT_SIGN_IN_MAIL_OPTIONS,
  type SignInMailOptions,
  SignInMailProcess,
} from './processes/accounts/sign-in-mail.ts';
import { CONTACT_EVENT_RETENTION_SCHEMA, ContactEventRetention } from './processes/contact-events/retention.ts';
import { TableStatistics } from './processes/table-statistics.ts';
import { DEFAULT_TEMP_INBOX_RETENTION_EVERY_MS, TempInboxRetention } from './processes/temp-inboxes/retention.ts';
import { tempInboxRoute } from './commands/temp-inboxes/inbound.ts';
import { TEMP_INBOX_LIFETIME_MS } from './domain/temp-inboxes/rules.ts';
import {
  DEFAULT_INVITATION_MAIL_OPTIONS,
  type InvitationMailOptions,
  MemberInvitationMailProcess,
} from './processes/members/invitation-mail.ts';
import { returnPathRoute } from './processes/emails/return-path.ts';
import {
  DEFAULT_DOMAIN_CHECK_OPTIONS,
  DomainCheckProcess,
  type DomainCheckOptions,
} from './processes/domains/worker.ts';
import {
  DEFAULT_EMAIL_DELIVERY_OPTIONS,
  EmailDeliveryProcess,
  type EmailDeliveryOptions,
} from './processes/emails/worker.ts';
import {
  DEFAULT_LANE_PAUSE_OPTIONS,
  LanePauseProcess,
  type LanePauseOptions,
} from './processes/sending-streams/worker.ts';
import { DEFAULT_SENT_MAIL_OPTIONS, SentMailFilingProcess, type SentMailOptions } from './processes/threads/worker.ts';
import {
  DEFAULT_NOTICE_OPTIONS,
  WebhookNoticeProcess,
  type WebhookNoticeOptions,
} from './processes/webhooks/notices.ts';
import {
  DEFAULT_DELIVERY_OPTIONS,
  WebhookDeliveryProcess,
  type WebhookDeliveryOptions,
} from './processes/webhooks/worker.ts';
import { DEFAULT_READ_MODEL_DEADLINE_MS, ProjectionRunner } from './projections/runner.ts';

/**
 * The composition root: the one place that knows every layer and wires the adapters that the
 * configuration picks. The server, the CLI, the tests and the benchmarks all start from here.
 */
export interface System {
  database: Database;
  /** The same database with the read models' tables named: what the queries are given. */
  readDb: Kysely<ReadModels>;
  store: EventStore;
  /** Where process managers take their work from: NATS JetStream, or in-process by default. */
  bus: WorkQueue;
  runner: ProjectionRunner;
  commands: CommandContext;
  cursors: Cursors;
  rateLimiter: RateLimiter;
  keyAdmissions: KeyAdmissions;
  requestLog: RequestLog;
  idempotencyKeys: IdempotencyKeys;
  renderer: TemplateRenderer;
  mail: MailSender;
  webhooks: { allowPrivate: boolean };
  /** DNS, the secret vault (DKIM keys), our hosts and key generation, as the domain commands use them. */
  domains: DomainPorts;
  /** The key forward consent links carry a MAC under, shared by every process on the database. */
  consentKey: Buffer;
  /** The key invitation acceptance links carry a MAC under, shared by every process on the database. */
  members: { key: Buffer };
  /** People's sign-in to our pages: challenges, the vault, their codes; `secureCookies` when the pages are served over https. */
  accounts: { ports: AccountPorts; secureCookies: boolean };
  /** Connected apps: registration, approvals, codes and tokens (infra/oauth). */
  oauth: OAuthPorts;
  /** Step-up of OAuth apps: challenges, wrong codes, elevations; codes mailed as sign-in codes are. */
  stepUp: StepUpPorts;
  /** Raw messages and attachments: small ones as rows of PostgreSQL, larger ones as files under `<dataDir>/blobs`, or in `blobS3Url`. */
  blobs: BlobStore;
  /** Template images' urls: the key of their MAC, and the base they are served under. */
  images: { key: Buffer; publicUrl: string };
  /** What every way of sending needs (commands/emails/handlers.ts `sendEmail`). */
  sending: SendingPorts;
  /** Outbound mail: the relay, or the recipients' MX hosts. */
  outbound: Delivery;
  /** The AI port (translation, template design) and the daily allowance of AI actions. */
  ai: AiPorts;
  /** Provider imports: the other providers' APIs (through the SSRF guard) and the vault their keys wait in. */
  providerImports: ProviderImportPorts;
  /** Mailbox imports: uploads wait under `<dataDir>/imports/<importId>` until the import settles. */
  mailboxImports: MailboxImportPorts;
  /** Disposable inboxes: `TEMP_MAIL_DOMAIN` (null: off) and how long an inbox lives. */
  tempMail: { domain: string | null; lifetimeMs: number };
  /** Tasks: the plan's numbers of tasks and of active tasks. */
  tasks: { limits: TaskLimits };
  close(): Promise<void>;
}

export async function resolveDatabaseUrl(
  config: Pick<Config, 'databaseUrl' | 'dataDir'>,
): Promise<{ url: string; stop: () => Promise<void> }> {
  if (config.databaseUrl) return { url: config.databaseUrl, stop: async () => {} };
  return startEmbeddedPostgres(config.dataDir);
}

/** Opens the database, runs migrations and (unless `project` is false) starts the projectors. */
export interface SystemOptions {
  eventStoreUrl?: string;
  natsUrl?: string;
  /** With `natsUrl`: how the connection behaves (tests shorten the pause between reconnects and the request timeout). */
  nats?: Pick<NatsWorkQueueOptions, 'reconnectWaitMs' | 'requestTimeoutMs'>;
  /** false: no projectors run here (another process projects, or an operator tool). */
  project?: boolean;
  /** false: this process sends no webhooks (the CLI). */
  deliver?: boolean;
  /** Connections of the main pool (20); the delivery bookkeeping's pool takes up to half as many again (10). */
  poolSize?: number;
  /** Outbound mail over SMTP; without it, mail goes to `.eml` files in `outboxDir`. */
  smtpUrl?: string;
  outboxDir?: string;
  webhooks?: Partial<WebhookDeliveryOptions> & { allowPrivate?: boolean };
  /** The mail sent when deliveries switch an endpoint off. */
  webhookNotices?: Partial<WebhookNoticeOptions>;
  /** Automation runs (timers); `minuteMs` shortens a minute in tests. */
  automations?: Partial<AutomationRunOptions>;
  /** Broadcasts: pages, their width, how long a paused lane holds one. */
  broadcasts?: Partial<BroadcastOptions>;
  /** Provider imports: where each provider's API is, whether it may be private, and the process's timings. */
  providerImports?: ProviderConfig & Partial<ProviderImportOptions>;
  /** Mailbox imports: the size of upload parts (default 8 MiB), the process's batches, the archives' limits. */
  mailboxImports?: Partial<MailboxImportOptions> & { chunkBytes?: number; archive?: Partial<ArchiveLimits> };
  /**
   * How often tables are analyzed when the database runs without autovacuum
   * (processes/table-statistics.ts; 15 s).
   */
  tableStatisticsEveryMs?: number;
  /** Workspace exports: the process's pages, progress and retention timings. */
  exports?: Partial<ExportOptions>;
  /** How often expired contact events are purged (default hourly). */
  retentionEveryMs?: number;
  /**
   * How long a write waits for its read models before its request answers 503 (the change stored,
   * the handler finishing in the background); default 10 s.
   */
  readModelDeadlineMs?: number;
  /** How far behind a read model is rebuilt rather than caught up (`ProjectionRunnerOptions`). */
  bulkCatchUpEvents?: number;
  /** The rate limiter's clock (Date.now): a test moves it on to the next minute's window rather than wait. */
  rateLimitNow?: () => number;
  /**
   * The vault's master key (`SECRETS_KEY`, base64 of 32 bytes); without it, `<dataDir>/secrets.key`,
   * made on first start. Every process on one database must use the same one.
   */
  secretsKey?: string;
  /** Where the key file lives when there is no `secretsKey` (default `.data`). */
  dataDir?: string;
  /** DNS servers for domain checks (`DNS_SERVERS`); none: the system's resolver. */
  dns?: { servers?: string[]; timeoutMs?: number };
  /** The hosts domains point their records at (`MAIL_HOSTNAME` and the `MAIL_*_HOST` variables). */
  mailHosts?: MailHosts;
  /** The background DNS re-check of domains. */
  domainChecks?: Partial<DomainCheckOptions>;
  /** The consent mails of address forwards: their sender, and `publicUrl`, where their links point. */
  forwardConsent?: Partial<ConsentMailOptions>;
  /** Invitation mails: their timings (sender and `publicUrl` default to `forwardConsent`'s). */
  invitationMails?: Partial<InvitationMailOptions>;
  /** Sign-in code mails: their timings (sender and `publicUrl` default to `forwardConsent`'s). */
  signInMails?: Partial<SignInMailOptions>;
  /** `BLOB_S3_URL`: raw messages in an S3-compatible bucket; without it, files under `<dataDir>/blobs`. */
  blobS3Url?: string;
  /** `PUBLIC_URL` (https), where the unsubscribe links of broadcast-lane mail point; default `https://localhost`. */
  publicUrl?: string;
  /**
   * The AI port: an OpenAI-compatible endpoint (`AI_BASE_URL`, `AI_API_KEY`, `AI_MODEL`); without
   * it, what needs a model answers 409. `dailyActions`: `AI_DAILY_ACTIONS`, default 1,000.
   */
  ai?: { endpoint?: OpenAiConfig | null; dailyActions?: number };
  /** Sending: the monthly allowance of live messages per workspace (`SEND_MONTHLY_ALLOWANCE`, default 1,000,000). */
  sending?: { monthlyAllowance?: number };
  /** Outbound delivery (`SMTP_RELAY_URL`, `SMTP_MX_PORT`, the EHLO name); its DNS is `dns`'s servers. */
  outbound?: Partial<DeliveryConfig>;
  /** The delivery process manager of sent messages; tests shorten its retry schedule. */
  emailDelivery?: Partial<EmailDeliveryOptions>;
  /** Filing sent mail in its mailbox's threads. */
  sentMail?: Partial<SentMailOptions>;
  /** Appending the pauses of sending lanes the guard finds owed. */
  lanePauses?: Partial<LanePauseOptions>;
  /**
   * Disposable inboxes: `domain` is `TEMP_MAIL_DOMAIN` (without it POST /temp-mail/inboxes answers
   * 409 `temp_mail_not_configured`); an inbox lives `lifetimeMs` (an hour); expired ones are
   * deleted every `retentionEveryMs` (a minute).
   */
  tempMail?: { domain?: string; lifetimeMs?: number; retentionEveryMs?: number };
  /**
   * Tasks: the plan's numbers (`TASKS_MAX`, `TASKS_ACTIVE_MAX`, `TASK_JOBS_PER_DAY`; default 100,
   * 20 and 20), the scheduler's timings.
   */
  tasks?: {
    limits?: Partial<TaskLimits>;
    scheduler?: Partial<TaskSchedulerOptions>;
    /**
     * The assistant's timings (`TASK_APPROVAL_TIMEOUT_MS`, `TASK_START_WITHIN_MS`,
     * `TASK_STALE_AFTER_MS`); `start: false` leaves runs queued (tests that start a runner of their own).
     */
    runner?: Partial<TaskRunnerOptions> & { start?: boolean };
    /** The mails of the tasks' `notify` (sender and public address as the invitations'). */
    notices?: Partial<OwedMailOptions>;
  };
}

export async function openSystem(databaseUrl: string, options: SystemOptions = {}): Promise<System> {
  const database = openDatabase(databaseUrl, options.poolSize ?? 20);
  // Adapters used only when configured or only on some paths (EventStoreDB, the AI model, mailauth)
  // are imported when first needed: loading them costs every process about a second at start.
  const store: EventStore = options.eventStoreUrl
    ? await (await import('./infra/eventstore/eventstoredb.ts')).EventStoreDbEventStore.connect(options.eventStoreUrl)
    : new PostgresEventStore(database.pool);
  const bus: WorkQueue = options.natsUrl
    ? await NatsWorkQueue.connect(options.natsUrl, options.nats)
    : new InProcessWorkQueue();
  const readModelDeadlineMs = options.readModelDeadlineMs ?? DEFAULT_READ_MODEL_DEADLINE_MS;
  const wakeups = new DueWakeups();
  const writeTransactions = new PipelinedWrites(databaseUrl);
  const runner = new ProjectionRunner(database.db, database.pool, store, registry, projectors, reactors, {
    readModelDeadlineMs,
    bulkCatchUpEvents: options.bulkCatchUpEvents,
    worker: `${os.hostname()}:${process.pid}`,
    onReactorWrote: (tables) => wakeups.wake(tables),
    writeTransactions,
  });
  await migrateSchema(database.pool, runner);
  if (options.project !== false) await runner.start();
  const requestLog = new RequestLog(database.pool);
  // A repeat of a request waits for the first as long as the first may wait for its read models.
  const idempotencyKeys = new IdempotencyKeys(database.pool, readModelDeadlineMs);
  idempotencyKeys.start();
  const commands: CommandContext = { store, registry, readModels: runner, sanitiseHtml };
  const dataDir = options.dataDir ?? path.resolve('.data');
  // Made here with the default mode: the stores below make their folders owner-only, recursively,
  // and a data folder made 0700 by them would shut out the embedded PostgreSQL (another user).
  await mkdir(dataDir, { recursive: true });
  // Small blobs (a composed message) as rows: their flushes are shared (infra/blobs/postgres.ts).
  const blobs = new SmallBlobTier(database.pool, await openBlobStore({ s3Url: options.blobS3Url, dataDir }));
  const renderer = createTemplateRenderer({ cacheSize: 1000 });
  const vault = await SecretVault.open(database.pool, await loadMasterKey({ secretsKey: options.secretsKey, dataDir }));
  const ai: AiPorts = {
    model: options.ai?.endpoint
      ? new (await import('./infra/ai/openai.ts')).OpenAiChatModel(options.ai.endpoint)
      : null,
    dailyActions: options.ai?.dailyActions ?? DEFAULT_DAILY_AI_ACTIONS,
  };
  const sending: SendingPorts = {
    lookups: sendingLookups(database.db.withTables<ReadModels>()),
    renderer,
    blobs,
    compose: composeMessage,
    monthlyAllowance: options.sending?.monthlyAllowance ?? DEFAULT_MONTHLY_ALLOWANCE,
    unsubscribeLinks: new UnsubscribeLinks(vault, options.publicUrl ?? 'https://localhost'),
    trackingLinks: new TrackingLinks(vault),
    ai,
  };
  const domains: DomainPorts = {
    dns: new NodeDns({ servers: options.dns?.servers, timeoutMs: options.dns?.timeoutMs }),
    secrets: vault,
    hosts: options.mailHosts ?? readConfig({}).mailHosts,
    newDkimKey: generateDkimKeyPair,
    disposableDomain: options.tempMail?.domain?.toLowerCase() ?? null,
  };
  const mail = openMailSender({
    smtpUrl: options.smtpUrl,
    outboxDir: options.outboxDir ?? path.join(dataDir, 'outbox'),
  });
  const allowPrivate = options.webhooks?.allowPrivate ?? false;
  const agents = createOutboundAgents({ allowPrivate });
  // Claims and attempt records are the bookkeeping of work done outside: a crash that loses the last
  // few ms of them only repeats a delivery (same webhook-id), so they skip the commit's fsync.
  const deliveryPool = openPool({
    connectionString: databaseUrl,
    max: Math.max(2, Math.ceil((options.poolSize ?? 20) / 2)),
    options: '-c synchronous_commit=off',
  });
  const deliveries = new WebhookDeliveryProcess(
    { pool: deliveryPool, bus, wakeups, commands, agents },
    { ...DEFAULT_DELIVERY_OPTIONS, ...options.webhooks },
  );
  if (options.deliver !== false) await deliveries.start();
  // Marked sent with full durability: a lost mark would mail the notice again.
  const notices = new WebhookNoticeProcess(
    { pool: database.pool, bus, wakeups, mail },
    { ...DEFAULT_NOTICE_OPTIONS, ...options.webhookNotices },
  );
  if (options.deliver !== false) await notices.start();
  const automationRuns = new AutomationRunProcess(
    { pool: database.pool, bus, wakeups, readModels: runner, sending: { commands, sending } },
    { ...DEFAULT_AUTOMATION_OPTIONS, ...options.automations },
  );
  if (options.deliver !== false) await automationRuns.start();
  const taskScheduler = new TaskScheduler(
    { pool: database.pool, bus, wakeups, commands, aiConfigured: ai.model !== null },
    { ...DEFAULT_TASK_SCHEDULER_OPTIONS, ...options.tasks?.scheduler },
  );
  if (options.deliver !== false) await taskScheduler.start();
  const { start: runTasks = true, ...runnerOptions } = options.tasks?.runner ?? {};
  const taskRunner = new TaskRunner(
    {
      pool: database.pool,
      bus,
      wakeups,
      commands,
      ai,
      reads: taskToolReads(database.db.withTables<ReadModels>(), blobs),
      sending,
    },
    { ...DEFAULT_TASK_RUNNER_OPTIONS, ...runnerOptions },
  );
  if (options.deliver !== false && runTasks) await taskRunner.start();
  const taskLimits = { ...DEFAULT_TASK_LIMITS, ...options.tasks?.limits };
  // In the background (awaited by close): a start never waits on it, and a failure only leaves
  // tasks active until the next start.
  const pastPlan =
    options.deliver === false
      ? Promise.resolve()
      : pauseTasksPastPlan(database.pool, commands, taskLimits).then(
          () => {},
          (error) => console.error('tasks past the plan:', error),
        );
  const broadcasts = new BroadcastProcess(
    { pool: database.pool, bus, wakeups, sending: { commands, sending } },
    { ...DEFAULT_BROADCAST_OPTIONS, ...options.broadcasts },
  );
  if (options.deliver !== false) await broadcasts.start();
  const {
    baseUrls,
    allowPrivate: providersPrivate,
    timeoutMs,
    exportPollMs,
    ...importOptions
  } = options.providerImports ?? {};
  const connector = openProviderConnector({ baseUrls, allowPrivate: providersPrivate, timeoutMs, exportPollMs });
  const providerImports: ProviderImportPorts = { connect: connector.connect, secrets: vault };
  const providerImportRuns = new ProviderImportProcess(
    {
      pool: database.pool,
      bus,
      wakeups,
      commands,
      ports: providerImports,
      checkUrl: (url) => checkReceiverUrl(url, { allowPrivate }),
    },
    { ...DEFAULT_PROVIDER_IMPORT_OPTIONS, ...importOptions },
  );
  if (options.deliver !== false) await providerImportRuns.start();
  const tableStatistics = new TableStatistics(database.pool, options.tableStatisticsEveryMs);
  await tableStatistics.start();
  const retention = new ContactEventRetention(database.pool, {
    everyMs: options.retentionEveryMs ?? 3_600_000,
    purgeStore: !options.eventStoreUrl,
  });
  if (options.deliver !== false) retention.start();
  const tempMail = {
    domain: options.tempMail?.domain?.toLowerCase() ?? null,
    lifetimeMs: options.tempMail?.lifetimeMs ?? TEMP_INBOX_LIFETIME_MS,
  };
  const tempInboxRetention = new TempInboxRetention(database.pool, commands, {
    everyMs: options.tempMail?.retentionEveryMs ?? DEFAULT_TEMP_INBOX_RETENTION_EVERY_MS,
    purgeStore: !options.eventStoreUrl,
  });
  if (options.deliver !== false) tempInboxRetention.start();
  const oauth = new PostgresOAuth(database.pool);
  const oauthRetention = new OAuthRetention(oauth, DEFAULT_OAUTH_RETENTION_EVERY_MS);
  if (options.deliver !== false) oauthRetention.start();
  const domainChecks = new DomainCheckProcess(
    { pool: database.pool, bus, wakeups, commands, ports: domains },
    { ...DEFAULT_DOMAIN_CHECK_OPTIONS, ...options.domainChecks },
  );
  if (options.deliver !== false) await domainChecks.start();
  const consentKey = await serverSecret(database.pool, 'forward-consent');
  const images = {
    key: await serverSecret(database.pool, 'template-images'),
    publicUrl: (options.publicUrl ?? 'https://localhost').replace(/\/+$/, ''),
  };
  const consentOptions = { ...DEFAULT_CONSENT_MAIL_OPTIONS, ...options.forwardConsent };
  const consentMails = new ForwardConsentMailProcess(
    { pool: database.pool, bus, wakeups, mail, consentKey },
    consentOptions,
  );
  if (options.deliver !== false) await consentMails.start();
  const members = { key: await serverSecret(database.pool, 'member-invitations') };
  // Invitations are mailed by the same sender, with links to the same public address.
  const invitationMails = new MemberInvitationMailProcess(
    { pool: database.pool, bus, wakeups, mail, key: members.key },
    {
      ...DEFAULT_INVITATION_MAIL_OPTIONS,
      from: consentOptions.from,
      publicUrl: consentOptions.publicUrl,
      ...options.invitationMails,
    },
  );
  if (options.deliver !== false) await invitationMails.start();
  // Tasks' notices too.
  const taskNotices = new TaskNoticeMailProcess(
    { pool: database.pool, bus, wakeups, mail },
    {
      ...DEFAULT_TASK_NOTICE_OPTIONS,
      from: consentOptions.from,
      publicUrl: consentOptions.publicUrl,
      ...options.tasks?.notices,
    },
  );
  if (options.deliver !== false) await taskNotices.start();
  const accountCodes = new AccountCodes(await serverSecret(database.pool, 'accounts'));
  const accounts = {
    ports: {
      challenges: new PostgresSignInChallenges(database.pool, () => wakeups.wake(['sign_in_mails'])),
      secrets: vault,
      codes: accountCodes,
      findAccount: (email: string) => findAccountByEmail(database.db.withTables<ReadModels>(), email),
    },
    // The pages are reached at the mails' public address: behind https there, the cookie is Secure.
    secureCookies: consentOptions.publicUrl.startsWith('https:'),
  };
  const signInMails = new SignInMailProcess(
    { pool: database.pool, bus, wakeups, mail, codes: accountCodes },
    {
      ...DEFAULT_SIGN_IN_MAIL_OPTIONS,
      from: consentOptions.from,
      publicUrl: consentOptions.publicUrl,
      ...options.signInMails,
    },
  );
  if (options.deliver !== false) await signInMails.start();
  const stepUp: StepUpPorts = {
    store: new PostgresStepUp(database.pool),
    accounts: accounts.ports,
    mail,
    from: options.signInMails?.from ?? consentOptions.from,
    publicUrl: options.signInMails?.publicUrl ?? consentOptions.publicUrl,
    emailOf: (userId) => emailOfAccount(database.db.withTables<ReadModels>(), userId),
  };
  const outbound = openDelivery(
    { ...readConfig({}).outbound, ...options.outbound },
    new NodeDns({ servers: options.dns?.servers, timeoutMs: options.dns?.timeoutMs }),
  );
  const emailDeliveries = new EmailDeliveryProcess(
    { pool: deliveryPool, bus, wakeups, commands, blobs, delivery: outbound, secrets: vault },
    { ...DEFAULT_EMAIL_DELIVERY_OPTIONS, ...options.emailDelivery },
  );
  if (options.deliver !== false) await emailDeliveries.start();
  const sentMail = new SentMailFilingProcess(
    {
      pool: database.pool,
      bus,
      wakeups,
      commands,
      blobs,
      texts: new PostgresTextIndex(database.pool),
      lookups: mailboxLookups(database.db.withTables<ReadModels>()),
    },
    { ...DEFAULT_SENT_MAIL_OPTIONS, ...options.sentMail },
  );
  if (options.deliver !== false) await sentMail.start();
  const { chunkBytes, archive, ...mailboxImportOptions } = options.mailboxImports ?? {};
  const importStorage = new FileImportStorage(path.join(dataDir, 'imports'));
  const mailboxImports: MailboxImportPorts = {
    storage: importStorage,
    chunkBytes: chunkBytes ?? 8 * 1024 * 1024,
    archives: new ArchiveReader(importStorage, { ...DEFAULT_ARCHIVE_LIMITS, ...archive }),
  };
  const mailboxImportRuns = new MailboxImportProcess(
    {
      pool: database.pool,
      bus,
      wakeups,
      commands,
      ports: mailboxImports,
      blobs,
      texts: new PostgresTextIndex(database.pool),
      lookups: mailboxLookups(database.db.withTables<ReadModels>()),
    },
    { ...DEFAULT_MAILBOX_IMPORT_OPTIONS, ...mailboxImportOptions },
  );
  if (options.deliver !== false) await mailboxImportRuns.start();
  const exportRuns = new ExportProcess(
    { pool: database.pool, bus, wakeups, commands, blobs },
    { ...DEFAULT_EXPORT_OPTIONS, ...options.exports },
  );
  if (options.deliver !== false) await exportRuns.start();
  const lanePauses = new LanePauseProcess(
    { pool: database.pool, bus, wakeups, commands },
    { ...DEFAULT_LANE_PAUSE_OPTIONS, ...options.lanePauses },
  );
  if (options.deliver !== false) await lanePauses.start();
  return {
    database,
    readDb: database.db.withTables<ReadModels>(),
    store,
    bus,
    runner,
    commands,
    mail,
    webhooks: { allowPrivate },
    domains,
    consentKey,
    members,
    accounts,
    oauth,
    stepUp,
    outbound,
    cursors: new Cursors(await serverSecret(database.pool, 'cursor')),
    rateLimiter: new RateLimiter(database.pool, options.rateLimitNow),
    keyAdmissions: new KeyAdmissions(database.pool),
    requestLog,
    idempotencyKeys,
    renderer,
    blobs,
    images,
    sending,
    ai,
    providerImports,
    mailboxImports,
    tempMail,
    tasks: { limits: taskLimits },
    async close() {
      await exportRuns.stop();
      await mailboxImportRuns.stop();
      await providerImportRuns.stop();
      connector.close();
      await emailDeliveries.stop();
      await lanePauses.stop();
      await sentMail.stop();
      await outbound.close();
      await deliveries.stop();
      await notices.stop();
      await automationRuns.stop();
      await pastPlan;
      await taskScheduler.stop();
      await taskRunner.stop();
      await taskNotices.stop();
      await broadcasts.stop();
      await retention.stop();
      await tableStatistics.stop();
      await tempInboxRetention.stop();
      await oauthRetention.stop();
      await domainChecks.stop();
      await consentMails.stop();
      await invitationMails.stop();
      await signInMails.stop();
      await deliveryPool.end();
      await runner.stop();
      await writeTransactions.close();
      await idempotencyKeys.close();
      await requestLog.flush();
      await bus.close();
      await store.close();
      await database.close();
      await mail.close();
      await blobs.close();
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}

export function serve(system: System, options: { logger?: boolean | object } = {}): Promise<FastifyInstance> {
  return buildServer(
    {
      db: system.readDb,
      pool: system.database.pool,
      commands: system.commands,
      history: { store: system.store, registry },
      cursors: system.cursors,
      rateLimiter: system.rateLimiter,
      keyAdmissions: system.keyAdmissions,
      requestLog: system.requestLog,
      idempotencyKeys: system.idempotencyKeys,
      renderer: system.renderer,
      webhooks: { checkUrl: (url) => checkReceiverUrl(url, system.webhooks) },
      domains: system.domains,
      forwardConsent: { key: system.consentKey },
      members: system.members,
      accounts: system.accounts,
      oauth: system.oauth,
      stepUp: system.stepUp,
      images: system.images,
      sending: system.sending,
      ai: system.ai,
      providerImports: system.providerImports,
      mailboxImports: system.mailboxImports,
      tempMail: system.tempMail,
      tasks: system.tasks,
      parseMessage: async (raw) => (await parseMessage(system.blobs, Readable.from([raw]), raw.length)).summary,
    },
    options,
  );
}

/** Where SMTP submission listens, and how (infra/config.ts `submission`). */
export interface SubmissionOptions {
  port: number;
  host: string;
  hostname: string;
  maxMessageBytes: number;
  tls?: { key: string | Buffer; cert: string | Buffer };
  onError?: (error: unknown, context: string) => void;
}

/**
 * The SMTP submission listener (`SUBMISSION_PORT`) over the system's sending: logins are
 * addresses' login names and app passwords, read from the addresses read model.
 */
export function startSubmission(
  system: System,
  options: SubmissionOptions,
): Promise<SubmissionListener<SubmissionLogin>> {
  const lookup: LoginLookup = async (login) => {
    const found = await mailboxLogin(system.readDb, login);
    if (!found) return undefined;
    const { address, passwordHashes } = found;
    return { workspaceId: address.workspace_id, addressId: address.id, address: address.address, passwordHashes };
  };
  return SubmissionListener.start({
    ...options,
    maxRecipients: RECIPIENTS_MAX,
    ports: submissionPorts({ commands: system.commands, sending: system.sending }, lookup),
  });
}

/** Where the inbound SMTP listener (the MX) listens, and how (infra/config.ts `inbound`). */
export interface InboundOptions {
  port: number;
  host: string;
  /** Our name (`MAIL_HOSTNAME`): the greeting, the Received line and the Authentication-Results. */
  hostname: string;
  maxMessageBytes: number;
  /** `SPAM_FILTER_URL` (rspamd's normal worker); without it, authentication alone. */
  spamFilterUrl?: string;
  /**
   * Routes tried before the return path's (processes/emails/return-path.ts: bounces, feedback
   * reports) and the mailboxes (commands/threads/inbound.ts `InboundRoute`).
   */
  routes?: InboundRoute<unknown>[];
  onError?: (error: unknown, context: string) => void;
}

/** A message's text as `read_thread` gives it: its last few messages, each cut, from raw mail not too large to parse. */
const TOOL_TEXT = { messages: 10, chars: 4000, rawBytes: 2 * 1024 * 1024 };

/**
 * A file's text as `read_file` gives it: the first characters of a text type, decoded as UTF-8
 * from the first bytes only (at most four a character), so a large file costs no more to read.
 */
const FILE_TEXT = { chars: 10_000, types: /^text\/|^application\/(json|xml|csv)$|\+(json|xml)$/ };

/**
 * What a task's tools read (processes/tasks/tools.ts): the threads, labels, addresses, contacts,
 * unsubscribes and suppressions read models (among others), the messages' text from the stored raw mail, and the creator's current authority
 * (its key now, or the person's role now).
 */
export function taskToolReads(db: Kysely<ReadModels>, blobs: BlobStore): TaskToolReads {
  const textOf = async (sha256: string): Promise<string | null> => {
    const raw = await blobs.get(sha256);
    if (!raw) return null;
    const { simpleParser } = await import('mailparser');
    const parsed = await simpleParser(raw, { skipImageLinks: true, skipTextLinks: true });
    return (parsed.text ?? '').slice(0, TOOL_TEXT.chars);
  };
  const brief = (t: ThreadRow) => ({
    id: t.id,
    mailbox: t.address,
    subject: t.subject,
    labels: [t.label, ...(t.has_sent ? ['sent'] : []), ...t.custom_labels],
    unread: t.unread,
    snippet: t.snippet,
    participants: t.participants,
    lastMessageAt: t.last_message_at.toISOString(),
  });
  const names = (list: { name: string | null; address: string }[]) =>
    list.map((a) => (a.name ? `${a.name} <${a.address}>` : a.address));
  return {
    taskExists: async (workspaceId, taskId) => (await findTask(db, workspaceId, taskId)) !== undefined,
    async authority(workspaceId, owner) {
      if (owner.id === null) return null;
      if (owner.kind === 'apiKey') {
        const key = await keyAuthority(db, workspaceId, owner.id, new Date());
        // A key narrowed since can no longer run a task (tasks refuse narrowed credentials).
        return key && !key.narrowed ? key.scopes.filter(isPermission) : null;
      }
      const member = await findMember(db, workspaceId, owner.id);
      if (!member) return null;
      return member.is_owner ? PERMISSIONS : (member.role_permissions ?? []).filter(isPermission);
    },
    async threads(workspaceId, filter, limit) {
      const { label, ...rest } = filter;
      const rows = await listThreads(
        db,
        workspaceId,
        {
          ...rest,
          ...(label === 'sent' ? { sent: true } : label ? { label: label as SettableLabel } : {}),
          reach: null,
        },
        limit,
        null,
      );
      return rows.slice(0, limit).map(brief);
    },
    async thread(workspaceId, threadId) {
      const thread = await findThread(db, workspaceId, null, threadId);
      if (!thread) return null;
      const rows = await messagesOf(db, thread.id);
      const messages = await Promise.all(
        rows.map(async (m, i) => {
          const s = m.summary as MessageSummary;
          const recent = i >= rows.length - TOOL_TEXT.messages && m.raw_size <= TOOL_TEXT.rawBytes;
          return {
            id: m.id,
            direction: m.direction,
            messageId: m.header_id,
            from: s.from ? names([s.from])[0] : m.mail_from,
            to: names(s.to),
            cc: names(s.cc),
            subject: s.subject,
            date: m.received_at.toISOString(),
            snippet: s.snippet,
            text: recent ? await textOf(m.raw_sha256) : null,
          };
        }),
      );
      return { ...brief(thread), addressId: thread.address_id, domainId: thread.domain_id, messages };
    },
    threadOfMessage: async (workspaceId, messageId) => (await threadOfMessage(db, workspaceId, messageId)) ?? null,
    async labels(workspaceId, mailbox) {
      const rows = await listLabels(db, workspaceId, { address: mailbox, reach: null }, 100, null);
      return rows.slice(0, 100).map((l) => ({ id: l.id, name: l.name, mailbox: l.address }));
    },
    isMailbox: async (workspaceId, address) => (await findMailbox(db, workspaceId, address)) !== undefined,
    async contacts(workspaceId, q, limit) {
      const rows = await listContacts(db, workspaceId, { q }, limit, null);
      return rows.slice(0, limit).map(contactBrief);
    },
    async contact(workspaceId, email) {
      const row = await findContactByEmail(db, workspaceId, email);
      return row ? contactBrief(row) : null;
    },
    async sentEmails(workspaceId, filter, limit) {
      const rows = (await listEmails(db, workspaceId, { ...filter, reach: null }, limit, null)).slice(0, limit);
      const recipients = await recipientsOf(
        db,
        rows.map((r) => r.id),
      );
      return rows.map((r) => ({
        id: r.id,
        from: r.from_email,
        subject: r.subject,
        status: r.status,
        source: r.source,
        createdAt: r.created_at.toISOString(),
        recipients: recipients
          .filter((x) => x.email_id === r.id)
          .map((x) => ({ email: x.email, kind: x.kind, status: x.status })),
      }));
    },
    async sentEmail(workspaceId, emailId) {
      const row = await findEmail(db, workspaceId, null, emailId);
      return row ? viewEmail(row, await recipientsOf(db, [row.id])) : null;
    },
    async emailEvents(workspaceId, emailId) {
      const row = await findEmail(db, workspaceId, null, emailId);
      return row ? viewHistory(await historyOf(db, row.id)) : null;
    },
    audiences: async (workspaceId, limit) =>
      (await listAudiences(db, workspaceId, limit, null)).slice(0, limit).map(viewAudience),
    hasAudience: async (workspaceId, audienceId) => (await findAudience(db, workspaceId, audienceId)) !== undefined,
    async subscription(workspaceId, email) {
      const [contact, unsubscribes, suppression] = await Promise.all([
        findContactByEmail(db, workspaceId, email),
        unsubscribesOf(db, workspaceId, email),
        findSuppressionByEmail(db, workspaceId, email),
      ]);
      return {
        contactId: contact?.id ?? null,
        unsubscribes: unsubscribes.map((u) => ({
          id: u.id,
          audienceId: u.audience_id,
          source: u.source,
          createdAt: u.created_at.toISOString(),
        })),
        suppression: suppression
          ? { reason: suppression.reason, detail: suppression.detail, createdAt: suppression.created_at.toISOString() }
          : null,
      };
    },
    async audienceContacts(workspaceId, audienceId, limit) {
      if (!(await findAudience(db, workspaceId, audienceId))) return null;
      return (await listAudienceContacts(db, workspaceId, audienceId, limit)).map(contactBrief);
    },
    async templates(workspaceId, search, limit) {
      const rows = await listTemplates(db, workspaceId, { search }, 'updated-newest', limit, null);
      return rows.slice(0, limit).map((r) => {
        const { object: _, id, slug, name, description, status, publishedVersion, updatedAt } = viewTemplate(r);
        return { id, slug, name, description, status, publishedVersion, updatedAt };
      });
    },
    async template(workspaceId, idOrSlug) {
      const row = await findTemplate(db, workspaceId, idOrSlug);
      if (!row) return null;
      const { object: _, ...template } = viewTemplate(row);
      const live =
        row.published_version === null ? undefined : await findTemplateVersion(db, row.id, row.published_version);
      return { ...template, published: live ? { document: live.document, html: live.html } : null };
    },
    async templateAnalytics(workspaceId, idOrSlug, period) {
      const row = await findTemplate(db, workspaceId, idOrSlug);
      return row ? viewTemplateAnalytics(db, workspaceId, row.id, period, null) : null;
    },
    sendingLanes: (workspaceId) => viewLanes(db, workspaceId),
    async audienceGrowth(workspaceId, audienceId, days) {
      const all = await allAudiences(db, workspaceId);
      const selected = audienceId === undefined ? all : all.filter((x) => x.id === audienceId);
      if (selected.length === 0 && audienceId !== undefined) return null;
      const until = new Date();
      const since = new Date(until.getTime() - days * 86_400_000);
      return {
        object: 'audience_growth',
        ...(await audienceGrowth(db, selected, { since, until, grain: 'day', offsetMinutes: 0 })),
      };
    },
    broadcasts: async (workspaceId, limit) =>
      (await listBroadcasts(db, workspaceId, limit, null)).slice(0, limit).map(viewBroadcast),
    unsubscribes: async (workspaceId, filter, limit) =>
      (await listUnsubscribes(db, workspaceId, filter, limit, null)).slice(0, limit).map(viewUnsubscribe),
    async attachments(workspaceId, threadId, limit) {
      if (!(await findThread(db, workspaceId, null, threadId))) return null;
      const rows = await listFiles(db, workspaceId, { threadId, source: 'attachment', reach: null }, limit, null);
      return rows.slice(0, limit).map(viewFile);
    },
    async file(workspaceId, fileId) {
      const row = await findFile(db, workspaceId, null, fileId);
      if (!row) return null;
      const { object: _, ...file } = viewFile(row);
      if (!FILE_TEXT.types.test(row.content_type)) return { ...file, text: null };
      const bytes = Math.min(row.size, FILE_TEXT.chars * 4);
      if (bytes === 0) return { ...file, text: '', textCut: false };
      const stream = await blobs.stream(row.sha256, { start: 0, end: bytes - 1 });
      if (!stream) return { ...file, text: null };
      const chunks: Buffer[] = [];
      for await (const chunk of stream) chunks.push(chunk as Buffer);
      const decoded = new TextDecoder().decode(Buffer.concat(chunks));
      const text = decoded.slice(0, FILE_TEXT.chars);
      const cut = row.size > bytes || decoded.length > text.length;
      // A character split where the read stopped decodes as U+FFFD: not part of the text.
      return { ...file, text: cut ? text.replace(/\uFFFD+$/, '') : text, textCut: cut };
    },
  };
}

const contactBrief = (c: ContactRow): ContactBrief => ({
  email: c.email,
  name: c.name,
  notes: c.notes,
  attributes: c.attributes,
  lastSeenAt: c.last_seen_at?.toISOString() ?? null,
});

/** What filing arriving mail reads: the threads, addresses, domains, emails and contacts read models. */
export function mailboxLookups(db: Kysely<ReadModels>): MailboxPorts['lookups'] {
  return {
    mailbox: (address) => mailboxFor(db, address),
    threading: (workspaceId, mailbox, keys) => threadingKnowledge(db, workspaceId, mailbox, keys),
    arrival: (workspaceId, mailbox, keys, replyIds, sender) =>
      arrivalKnowledge(db, workspaceId, mailbox, keys, replyIds, sender),
  };
}

/**
 * The inbound SMTP listener (`SMTP_PORT`) over the system: mail for the enabled addresses of
 * verified domains (and catch-alls) is authenticated through the DNS port, parsed into the blob
 * store, judged and filed in threads (commands/threads/inbound.ts).
 */
export function startInbound(system: System, options: InboundOptions): Promise<InboundListener<RoutedRecipient>> {
  const db = system.readDb;
  // A burst of mail from one sender asks its SPF, DKIM and DMARC records once.
  const dns = new CachedDns(system.domains.dns);
  const onError = options.onError ?? ((error, context) => console.error(`inbound: ${context}:`, error));
  let authentication: Promise<typeof import('./infra/inbound/authenticate.ts')> | undefined;
  const mailboxes = mailboxRoute({
    commands: system.commands,
    lookups: mailboxLookups(db),
    texts: new PostgresTextIndex(system.database.pool),
    authenticate: async (raw, envelope) => {
      // Imported when the first message arrives (mailauth is slow to load), then kept: an import()
      // per message resolves the module again each time.
      authentication ??= import('./infra/inbound/authenticate.ts');
      return (await authentication).authenticateMessage(dns, raw, { ...envelope, hostname: options.hostname });
    },
    parse: (raw, size) => parseMessage(system.blobs, raw, size),
    spamFilter: options.spamFilterUrl
      ? new RspamdFilter({ url: options.spamFilterUrl, onError: (error) => onError(error, 'spam filter') })
      : null,
    rules: ruleRunPorts(system),
  });
  // Return-path mail (bounces, feedback reports) is ours to read, never a mailbox's.
  // The disposable domain is no workspace's: its mail never reaches the return path or the mailboxes.
  const domain = system.tempMail.domain;
  const tempInboxes =
    domain === null
      ? []
      : [
          anyRoute(
            tempInboxRoute({
              commands: system.commands,
              domain,
              parse: (raw, size) => parseMessage(system.blobs, raw, size),
            }),
          ),
        ];
  const { policy, handler } = routeInbound([
    ...(options.routes ?? []),
    ...tempInboxes,
    anyRoute(returnPathRoute(system.commands)),
    anyRoute(mailboxes),
  ]);
  return InboundListener.start({
    port: options.port,
    host: options.host,
    hostname: options.hostname,
    maxMessageBytes: options.maxMessageBytes,
    blobs: system.blobs,
    policy,
    handler,
    onError,
  });
}

/**
 * What running a mailbox's rules needs: its rules and time zone (the address's, or the domain's
 * catch-all's) from the read models, the addresses' forwards, the blob store, and sending as the
 * workspace's system on the `rule` source.
 */
export function ruleRunPorts(system: System): RuleRunPorts {
  const db = system.readDb;
  return {
    commands: system.commands,
    rules: (workspaceId, mailbox) => rulesOfMailbox(db, workspaceId, mailbox),
    timeZone: (workspaceId, mailbox) => mailboxTimeZone(db, workspaceId, mailbox),
    confirmedForward: async (addressId, destination) =>
      (await forwardsOf(db, [addressId])).some(
        (f) => f.destination === destination && f.status === 'confirmed' && f.enabled,
      ),
    raw: async (sha256) => {
      const raw = await system.blobs.get(sha256);
      if (raw === null) throw new Error(`blob ${sha256} is missing`);
      return raw;
    },
    send: async (workspaceId, input, now, options) => {
      const { email } = await sendEmail(
        { commands: system.commands, sending: system.sending },
        {
          actor: { workspaceId, kind: 'system', id: null },
          mode: 'live',
          reach: null,
          source: 'rule',
          catchAll: options?.catchAll ?? false,
        },
        input,
        now,
      );
      return { emailId: email.emailId };
    },
  };
}

async function underMigrationLock(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<void>): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock(72626000)');
    await work(client);
  } finally {
    await client.query('SELECT pg_advisory_unlock(72626000)');
    client.release();
  }
}

/**
 * Brings a database's schema up to date and starts nothing: the tests migrate one database once
 * per run and clone it for each test file (test/support/template.ts).
 */
export async function migrateDatabase(databaseUrl: string): Promise<void> {
  const database = openDatabase(databaseUrl, 2);
  try {
    const store = new PostgresEventStore(database.pool);
    await migrateSchema(
      database.pool,
      new ProjectionRunner(database.db, database.pool, store, registry, projectors, reactors),
    );
  } finally {
    await database.close();
  }
}

// Several processes may start against one database at once; migrations run one at a time, the
// read models' included (a version change drops and recreates their tables).
async function migrateSchema(pool: pg.Pool, runner: ProjectionRunner): Promise<void> {
  await underMigrationLock(pool, async (client) => {
    await migrate(client);
    await runner.migrate();
  });
}

async function migrate(client: pg.PoolClient): Promise<void> {
  // Trigram indexes serve the suppressions' substring search.
  await client.query('CREATE EXTENSION IF NOT EXISTS pg_trgm');
  await PostgresEventStore.migrate(client);
  await client.query(CONTACT_EVENT_RETENTION_SCHEMA);
  await client.query(RATE_LIMIT_SCHEMA);
  await client.query(REQUEST_LOG_SCHEMA);
  await client.query(IDEMPOTENCY_SCHEMA);
  await client.query('CREATE TABLE IF NOT EXISTS server_secrets (name text PRIMARY KEY, value bytea NOT NULL)');
  await SecretVault.migrate(client);
  await client.query(SIGN_IN_SCHEMA);
  await client.query(OAUTH_SCHEMA);
  await client.query(STEP_UP_SCHEMA);
  await SmallBlobTier.migrate(client);
  await client.query(TEXT_INDEX_SCHEMA);
}

/** A secret shared by every process on this database (cursor signing), made once. */
async function serverSecret(pool: pg.Pool, name: string): Promise<Buffer> {
  await pool.query('INSERT INTO server_secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [
    name,
    crypto.randomBytes(32),
  ]);
  const { rows } = await pool.query('SELECT value FROM server_secrets WHERE name = $1', [name]);
  return rows[0].value;
}
