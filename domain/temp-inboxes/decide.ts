import type { MessageSummary } from '../messages/summary.ts';
import { DomainError, fail } from '../shared/errors.ts';
import type { TempInboxAllowanceEvent, TempInboxEvent } from './events.ts';
import { TEMP_INBOX_CREATES_MAX, TEMP_INBOX_MESSAGES_MAX, TEMP_INBOX_WINDOW_MS } from './rules.ts';
import type { TempInboxAllowanceState, TempInboxState } from './state.ts';

/** 429 `temp_inbox_rate_limited`, with the seconds until the network may create again (Retry-After). */
export class TempInboxRateLimited extends DomainError {
  constructor(override readonly retryAfterSeconds: number) {
    super(
      'temp_inbox_rate_limited',
      `At most ${TEMP_INBOX_CREATES_MAX} disposable inboxes per 10 minutes from one network; see Retry-After.`,
    );
  }
}

/** A sliding window: the create is counted when fewer than 10 fell in the last 10 minutes. */
export function decideTakeAllowance(
  state: TempInboxAllowanceState,
  cmd: { network: string; inboxId: string; now: string },
): TempInboxAllowanceEvent[] {
  const now = Date.parse(cmd.now);
  const recent = state.takenAt.filter((at) => now - Date.parse(at) < TEMP_INBOX_WINDOW_MS);
  if (recent.length >= TEMP_INBOX_CREATES_MAX) {
    const freeAt = Date.parse(recent[0]!) + TEMP_INBOX_WINDOW_MS;
    throw new TempInboxRateLimited(Math.max(1, Math.ceil((freeAt - now) / 1000)));
  }
  return [{ type: 'TempInboxAllowanceTaken', data: { network: cmd.network, inboxId: cmd.inboxId, takenAt: cmd.now } }];
}

export function decideCreateTempInbox(
  state: TempInboxState,
  cmd: { inboxId: string; address: string; tokenHash: string; now: string; lifetimeMs: number },
): TempInboxEvent[] {
  if (state.exists) return [];
  const expiresAt = new Date(Date.parse(cmd.now) + cmd.lifetimeMs).toISOString();
  return [
    {
      type: 'TempInboxCreated',
      data: {
        inboxId: cmd.inboxId,
        address: cmd.address,
        tokenHash: cmd.tokenHash,
        createdAt: cmd.now,
        expiresAt,
      },
    },
  ];
}

/**
 * Mail for a live inbox is kept; for one gone or past its time it is `temp_inbox_not_found` (the
 * listener answers 550), for a full one `temp_inbox_full` (552). A Message-ID kept already keeps
 * nothing more.
 */
export function decideReceiveTempMail(
  state: TempInboxState,
  cmd: {
    inboxId: string;
    messageId: string;
    mailFrom: string;
    raw: { sha256: string; size: number };
    summary: MessageSummary;
    now: string;
  },
): TempInboxEvent[] {
  if (!state.exists || state.expired || Date.parse(state.expiresAt) <= Date.parse(cmd.now))
    fail('temp_inbox_not_found', 'No such disposable inbox.');
  const id = cmd.summary.messageId;
  if (id !== null && state.messageIds.includes(id)) return [];
  if (state.messages >= TEMP_INBOX_MESSAGES_MAX)
    fail('temp_inbox_full', `A disposable inbox keeps at most ${TEMP_INBOX_MESSAGES_MAX} messages.`);
  return [
    {
      type: 'TempInboxMessageReceived',
      data: {
        inboxId: cmd.inboxId,
        messageId: cmd.messageId,
        mailFrom: cmd.mailFrom,
        raw: cmd.raw,
        summary: cmd.summary,
        receivedAt: cmd.now,
      },
    },
  ];
}

/** Expiry, once its time has come. */
export function decideExpireTempInbox(state: TempInboxState, cmd: { inboxId: string; now: string }): TempInboxEvent[] {
  if (!state.exists || state.expired || Date.parse(state.expiresAt) > Date.parse(cmd.now)) return [];
  return [{ type: 'TempInboxExpired', data: { inboxId: cmd.inboxId, expiredAt: cmd.now } }];
}
