import { apiKeyEvents } from './api-keys/events.ts';
import { audienceEvents } from './audiences/events.ts';
import { contactEvents } from './contacts/events.ts';
import { automationEvents } from './automations/events.ts';
import { contactEventEvents } from './contact-events/events.ts';
import { roleEvents } from './roles/events.ts';
import { EventRegistry } from './shared/events.ts';
import { suppressionEvents } from './suppressions/events.ts';
import { templateNameEvents } from './template-names/events.ts';
import { templateEvents } from './templates/events.ts';
import { webhookEvents } from './webhooks/events.ts';
import { workspaceEvents } from './workspaces/events.ts';

/** Every event type of the service, in one registry; each aggregate contributes its list. */
export const registry = new EventRegistry([...workspaceEvents, ...apiKeyEvents, ...roleEvents, ...suppressionEvents,
  ...templateNameEvents,
  ...templateEvents,
  ...webhookEvents,
  ...contactEvents,
  ...audienceEvents,
  ...contactEventEvents,
  ...automationEvents,
]);
