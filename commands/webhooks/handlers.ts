import {
  decideCreateWebhookEndpoint,
  decideDeleteWebhookEndpoint,
  decideReplayWebhookDeliveries,
  decideRotateWebhookSecret,
  decideTestWebhookEndpoint,
  decideUpdateWebhookEndpoint,
  type EndpointSettings,
} from '../../domain/webhooks/decide.ts';
import { webhooksStream } from '../../domain/webhooks/events.ts';
import { webhooksAggregate, type WebhooksState } from '../../domain/webhooks/state.ts';
import { execute, type Actor, type CommandContext } from '../execute.ts';
import { newId } from '../ids.ts';
import { newWebhookSecret } from './secrets.ts';

/**
 * The receiver URL policy (infra/net/outbound-url.ts, wired by the composition root): the URL
 * normalised, or why a delivery may not go there.
 */
export type ReceiverUrlCheck = (url: string) => { ok: true; url: URL } | { ok: false; reason: string };

const run = (
  ctx: CommandContext,
  actor: Actor,
  decide: (s: WebhooksState) => ReturnType<typeof decideCreateWebhookEndpoint>,
) => execute(ctx, actor, webhooksStream(actor.workspaceId), webhooksAggregate, decide);

/** Creates an endpoint, enabled at once; answers its id and the secret, shown this once. */
export async function createWebhookEndpoint(
  ctx: CommandContext,
  actor: Actor,
  settings: EndpointSettings,
  now: string,
) {
  const endpointId = newId.webhookEndpoint();
  const secret = newWebhookSecret();
  await run(ctx, actor, (s) => decideCreateWebhookEndpoint(s, { endpointId, settings, secret, now }));
  return { endpointId, secret };
}

export const updateWebhookEndpoint = (
  ctx: CommandContext,
  actor: Actor,
  input: { endpointId: string; settings: Partial<EndpointSettings>; enabled?: boolean },
  now: string,
) => run(ctx, actor, (s) => decideUpdateWebhookEndpoint(s, { ...input, now }));

export async function rotateWebhookSecret(ctx: CommandContext, actor: Actor, endpointId: string, now: string) {
  const secret = newWebhookSecret();
  await run(ctx, actor, (s) => decideRotateWebhookSecret(s, { endpointId, secret, now }));
  return { secret };
}

export const deleteWebhookEndpoint = (ctx: CommandContext, actor: Actor, endpointId: string, now: string) =>
  run(ctx, actor, (s) => decideDeleteWebhookEndpoint(s, { endpointId, now }));

export const requestWebhookTest = (ctx: CommandContext, actor: Actor, endpointId: string, now: string) =>
  run(ctx, actor, (s) => decideTestWebhookEndpoint(s, { endpointId, testId: newId.webhookTest(), now }));

export const replayWebhookDeliveries = (
  ctx: CommandContext,
  actor: Actor,
  input: { endpointId: string; deliveryIds: string[] | null; since: string | null },
  now: string,
) => run(ctx, actor, (s) => decideReplayWebhookDeliveries(s, { ...input, now }));
