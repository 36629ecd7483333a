import type { AccountsTables } from './accounts/tables.ts';
import type { TempInboxesTables } from './temp-inboxes/tables.ts';
import type { TasksTables } from './tasks/tables.ts';
import type { AddressesTables } from './addresses/tables.ts';
import type { ApiKeysTables } from './api-keys/tables.ts';
import type { AutomationsTables } from './automations/tables.ts';
import type { BroadcastsTables } from './broadcasts/tables.ts';
import type { ContactEventsTables } from './contact-events/tables.ts';
import type { ContactsTables } from './contacts/tables.ts';
import type { DomainsTables } from './domains/tables.ts';
import type { DraftsTables } from './drafts/tables.ts';
import type { EmailsTables } from './emails/tables.ts';
import type { FilesTables } from './files/tables.ts';
import type { MembersTables } from './members/tables.ts';
import type { ProviderImportsTables } from './provider-imports/tables.ts';
import type { MailboxImportsTables } from './mailbox-imports/tables.ts';
import type { ExportsTables } from './exports/tables.ts';
import type { RolesTables } from './roles/tables.ts';
import type { RulesTables } from './rules/tables.ts';
import type { SendingStreamsTables } from './sending-streams/tables.ts';
import type { SignaturesTables } from './signatures/tables.ts';
import type { SuppressionsTables } from './suppressions/tables.ts';
import type { TemplateAnalyticsTables } from './template-analytics/tables.ts';
import type { TemplatesTables } from './templates/tables.ts';
import type { ThreadsTables } from './threads/tables.ts';
import type { UnsubscribesTables } from './unsubscribes/tables.ts';
import type { WebhooksTables } from './webhooks/tables.ts';
import type { WorkspacesTables } from './workspaces/tables.ts';

/**
 * Every read model's tables: the database as the queries' callers (api/, the composition root)
 * hold it, so a query they pass it to is checked against the tables it reads. One line per slice,
 * like the projectors in all.ts.
 */
export type ReadModels = Flat<
  WorkspacesTables &
    ApiKeysTables &
    RolesTables &
    SuppressionsTables &
    UnsubscribesTables &
    TemplatesTables &
    WebhooksTables &
    ContactsTables &
    ContactEventsTables &
    AutomationsTables &
    DomainsTables &
    AddressesTables &
    SignaturesTables &
    SendingStreamsTables &
    EmailsTables &
    TemplateAnalyticsTables &
    BroadcastsTables &
    ProviderImportsTables &
    MailboxImportsTables &
    ExportsTables &
    ThreadsTables &
    RulesTables &
    FilesTables &
    DraftsTables &
    MembersTables &
    AccountsTables &
    TempInboxesTables &
    TasksTables
>;

/** One object type, as Kysely's `withTables` wants (an intersection of interfaces has no index signature). */
type Flat<T> = { [K in keyof T]: T[K] };
