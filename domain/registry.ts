import { accountEvents } from './accounts/events.ts';
import { aiActionEvents } from './ai-actions/events.ts';
import { addressConsentEvents } from './address-consents/events.ts';
import { addressNameEvents } from './address-names/events.ts';
import { addressUsernameEvents } from './address-usernames/events.ts';
import { addressEvents } from './addresses/events.ts';
import { apiKeyEvents } from './api-keys/events.ts';
import { audienceEvents } from './audiences/events.ts';
import { automationEvents } from './automations/events.ts';
import { broadcastEvents } from './broadcasts/events.ts';
import { providerImportEvents } from './provider-imports/events.ts';
import { mailboxImportEvents } from './mailbox-imports/events.ts';
import { exportEvents } from './exports/events.ts';
import { contactEventEvents } from './contact-events/events.ts';
import { contactEvents } from './contacts/events.ts';
import { domainNameEvents } from './domain-names/events.ts';
import { domainEvents } from './domains/events.ts';
import { draftEvents } from './drafts/events.ts';
import { emailQuotaEvents } from './email-quotas/events.ts';
import { emailEvents } from './emails/events.ts';
import { labelEvents } from './labels/events.ts';
import { fileEvents } from './files/events.ts';
import { memberEvents } from './members/events.ts';
import { roleEvents } from './roles/events.ts';
import { sendingStreamEvents } from './sending-streams/events.ts';
import { signatureEvents } from './signatures/events.ts';
import { EventRegistry, type EventOf } from './shared/events.ts';
import { suppressionEvents } from './suppressions/events.ts';
import { unsubscribeEvents } from './unsubscribes/events.ts';
import { templateNameEvents } from './template-names/events.ts';
import { templateUseEvents } from './template-uses/events.ts';
import { templateEvents } from './templates/events.ts';
import { tempInboxEvents } from './temp-inboxes/events.ts';
import { taskEvents } from './tasks/events.ts';
import { taskRunEvents } from './task-runs/events.ts';
import { ruleEvents } from './rules/events.ts';
import { threadEvents } from './threads/events.ts';
import { webhookEvents } from './webhooks/events.ts';
import { workspaceEvents } from './workspaces/events.ts';

/** Every event definition of the service: each aggregate contributes its list, one line per slice. */
const definitions = [
  ...workspaceEvents,
  ...apiKeyEvents,
  ...roleEvents,
  ...addressNameEvents,
  ...addressEvents,
  ...addressUsernameEvents,
  ...addressConsentEvents,
  ...signatureEvents,
  ...suppressionEvents,
  ...unsubscribeEvents,
  ...templateNameEvents,
  ...templateEvents,
  ...webhookEvents,
  ...contactEvents,
  ...audienceEvents,
  ...contactEventEvents,
  ...automationEvents,
  ...domainEvents,
  ...domainNameEvents,
  ...emailEvents,
  ...sendingStreamEvents,
  ...emailQuotaEvents,
  ...broadcastEvents,
  ...providerImportEvents,
  ...mailboxImportEvents,
  ...exportEvents,
  ...templateUseEvents,
  ...aiActionEvents,
  ...threadEvents,
  ...labelEvents,
  ...ruleEvents,
  ...fileEvents,
  ...draftEvents,
  ...accountEvents,
  ...memberEvents,
  ...tempInboxEvents,
  ...taskEvents,
  ...taskRunEvents,
];

export const registry = new EventRegistry(definitions);

type Definition = (typeof definitions)[number];
/** The name of every event type; a projector's or reactor's keys are checked against it. */
export type EventType = Definition['type'];
/** The typed event (`{type, data}`) of one or more event types. */
export type EventOfType<T extends EventType> = EventOf<Extract<Definition, { type: T }>>;
