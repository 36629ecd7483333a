import { apiKeyEvents } from './api-keys/events.ts';
import { EventRegistry } from './shared/events.ts';
import { workspaceEvents } from './workspace/events.ts';

/** Every event type of the service, in one registry; each aggregate contributes its list. */
export const registry = new EventRegistry([...workspaceEvents, ...apiKeyEvents]);
