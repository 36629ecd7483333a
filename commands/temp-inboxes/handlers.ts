import crypto from 'node:crypto';
import type { MessageSummary } from '../../domain/messages/summary.ts';
import {
  decideCreateTempInbox,
  decideExpireTempInbox,
  decideReceiveTempMail,
  decideTakeAllowance,
} from '../../domain/temp-inboxes/decide.ts';
import { tempInboxNetworkStream, tempInboxStream } from '../../domain/temp-inboxes/events.ts';
import { tempInboxAggregate, tempInboxAllowanceAggregate } from '../../domain/temp-inboxes/state.ts';
import { hashSecret } from '../api-keys/token.ts';
import { type Actor, type CommandContext, execute, loadState } from '../execute.ts';
import { newId } from '../ids.ts';

/** Access tokens of disposable inboxes: a prefix of their own, so no key resolver mistakes one for a key. */
export const TEMP_INBOX_TOKEN_PREFIX = 'wms_tmp_';

/** Writes of disposable inboxes belong to no workspace: the service's own, per request. */
const serviceActor = (requestId?: string): Actor => ({ workspaceId: '', kind: 'system', id: null, requestId });

/** The local part is the inbox id's 24 hex digits: the inbox's stream, made once, holds the address. */
export const tempInboxAddress = (inboxId: string, domain: string) => `${inboxId.slice('tin_'.length)}@${domain}`;
export const tempInboxIdOf = (localPart: string) => (/^[0-9a-f]{24}$/.test(localPart) ? `tin_${localPart}` : null);

export interface CreatedTempInbox {
  inboxId: string;
  address: string;
  /** Shown once: only its hash is kept. */
  token: string;
  createdAt: string;
  expiresAt: string;
}

/**
 * Counts the create against the network (exactly: the network's stream is appended with the
 * revision read, so of N at once only those within the allowance are counted), then makes the
 * inbox. A crash between the two spends one of the network's creates and makes nothing.
 */
export async function createTempInbox(
  ctx: CommandContext,
  input: { network: string; domain: string; lifetimeMs: number; requestId?: string },
  now: string,
): Promise<CreatedTempInbox> {
  const actor = serviceActor(input.requestId);
  const inboxId = newId.tempInbox();
  await execute(ctx, actor, tempInboxNetworkStream(input.network), tempInboxAllowanceAggregate, (s) =>
    decideTakeAllowance(s, { network: input.network, inboxId, now }),
  );
  const token = `${TEMP_INBOX_TOKEN_PREFIX}${crypto.randomBytes(32).toString('base64url')}`;
  const address = tempInboxAddress(inboxId, input.domain);
  const { state } = await execute(
    ctx,
    actor,
    tempInboxStream(inboxId),
    tempInboxAggregate,
    (s) =>
      decideCreateTempInbox(s, { inboxId, address, tokenHash: hashSecret(token), now, lifetimeMs: input.lifetimeMs }),
    { likelyNew: true },
  );
  return { inboxId, address, token, createdAt: now, expiresAt: state.expiresAt };
}

/** Is the inbox there and within its time, as its stream says (the RCPT check needs no read model)? */
export async function liveTempInbox(ctx: CommandContext, inboxId: string, now: string): Promise<boolean> {
  const { state } = await loadState(ctx, tempInboxStream(inboxId), tempInboxAggregate);
  return state.exists && !state.expired && Date.parse(state.expiresAt) > Date.parse(now);
}

export async function receiveTempMail(
  ctx: CommandContext,
  inboxId: string,
  message: { mailFrom: string; raw: { sha256: string; size: number }; summary: MessageSummary },
  now: string,
): Promise<void> {
  const messageId = newId.tempMessage();
  await execute(ctx, serviceActor(), tempInboxStream(inboxId), tempInboxAggregate, (s) =>
    decideReceiveTempMail(s, { inboxId, messageId, ...message, now }),
  );
}

export async function expireTempInbox(ctx: CommandContext, inboxId: string, now: string): Promise<void> {
  await execute(ctx, serviceActor(), tempInboxStream(inboxId), tempInboxAggregate, (s) =>
    decideExpireTempInbox(s, { inboxId, now }),
  );
}
