import type { MessageSummary } from '../domain/messages/summary.ts';
import type pg from 'pg';
import type { Kysely } from 'kysely';
import type { AccountPorts } from '../commands/accounts/sign-in.ts';
import type { AiPorts } from '../commands/ai/actions.ts';
import type { DomainPorts } from '../commands/domains/handlers.ts';
import type { SendingPorts } from '../commands/emails/handlers.ts';
import type { CommandContext } from '../commands/execute.ts';
import type { OAuthPorts } from '../commands/oauth/ports.ts';
import type { StepUpPorts } from '../commands/step-up/handlers.ts';
import type { MailboxImportPorts } from '../commands/mailbox-imports/handlers.ts';
import type { ProviderImportPorts } from '../commands/provider-imports/handlers.ts';
import type { TemplateRenderer } from '../commands/templates/render.ts';
import type { ReceiverUrlCheck } from '../commands/webhooks/handlers.ts';
import type { TaskLimits } from '../domain/tasks/decide.ts';
import type { EventHistory } from '../projections/history.ts';
import type { ReadModels } from '../projections/tables.ts';
import type { IdempotencyKeys } from './idempotency.ts';
import type { Cursors } from './paging.ts';
import type { KeyAdmissions } from '../projections/api-keys/admission.ts';
import type { RateLimiter } from './plugins/rate-limit.ts';
import type { RequestLog } from './request-log.ts';

/** What the routes are given by the composition root (system.ts `serve`). */
export interface ApiDeps {
  /** The read models (the request log adds its own table: api/request-log.ts). */
  db: Kysely<ReadModels>;
  pool: pg.Pool;
  commands: CommandContext;
  /** The event store as read for audit logs (projections/history.ts). */
  history: EventHistory;
  cursors: Cursors;
  rateLimiter: RateLimiter;
  /** Every API key request's admission: its key read and its request counted (projections/api-keys/admission.ts). */
  keyAdmissions: KeyAdmissions;
  requestLog: RequestLog;
  idempotencyKeys: IdempotencyKeys;
  renderer: TemplateRenderer;
  /** Webhook receivers: the URL policy (`http://` and private addresses only where WEBHOOK_ALLOW_PRIVATE is set). */
  webhooks: { checkUrl: ReceiverUrlCheck };
  /** What domain commands reach outside: DNS, the secret vault, our hosts, key generation. */
  domains: DomainPorts;
  /** The key consent links carry a MAC under (commands/addresses/consent.ts). */
  forwardConsent: { key: Buffer };
  /** The key invitation acceptance links carry a MAC under (commands/members/links.ts). */
  members: { key: Buffer };
  /** People's sign-in to our pages (commands/accounts); `secureCookies`: the pages are served over https. */
  accounts: { ports: AccountPorts; secureCookies: boolean };
  /** Connected apps: registration and the authorization server (infra/oauth). */
  oauth: OAuthPorts;
  /** Step-up verification of OAuth apps (commands/step-up). */
  stepUp: StepUpPorts;
  /** Template images: the key their urls carry a MAC under, and where this service is reached (`PUBLIC_URL`). */
  images: { key: Buffer; publicUrl: string };
  /** What every way of sending needs (commands/emails/handlers.ts `sendEmail`). */
  sending: SendingPorts;
  /** The AI port (template design; sends reach it through `sending`) and the daily allowance of AI actions. */
  ai: AiPorts;
  /** Provider imports: the other providers' APIs and the vault their keys wait in. */
  providerImports: ProviderImportPorts;
  /** Mailbox imports: where uploads wait, and the size of their parts. */
  mailboxImports: MailboxImportPorts;
  /** Disposable inboxes: `TEMP_MAIL_DOMAIN` (null: off) and how long an inbox lives. */
  tempMail: { domain: string | null; lifetimeMs: number };
  /**
   * Tasks: the plan's numbers of tasks, of active tasks and of one-off jobs a day (`TASKS_MAX`,
   * `TASKS_ACTIVE_MAX`, `TASK_JOBS_PER_DAY`).
   */
  tasks: { limits: TaskLimits };
  /** Reads a pasted message for a rules dry run (infra/inbound/summary.ts; its attachments go to the blob store). */
  parseMessage(raw: Buffer): Promise<MessageSummary>;
}
