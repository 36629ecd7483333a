import { DomainError } from '../shared/errors.ts';
import type { AddressConsentEvent } from './events.ts';
import { type AddressConsentState, CONSENT_MAILS_MAX } from './state.ts';

export const CONSENT_WINDOW_MS = 24 * 60 * 60 * 1000;

/** 429 `forward_consent_rate_limited`, with the seconds until a mail may go again (Retry-After). */
export class ConsentRateLimited extends DomainError {
  constructor(
    message: string,
    param: string | null,
    override readonly retryAfterSeconds: number,
  ) {
    super('forward_consent_rate_limited', message, param);
  }
}

export function decideAllowConsentMail(
  state: AddressConsentState,
  cmd: { destination: string; workspaceId: string; forwardId: string; now: string; param: string | null },
): AddressConsentEvent[] {
  const now = Date.parse(cmd.now);
  const recent = state.sentAt.filter((at) => now - Date.parse(at) < CONSENT_WINDOW_MS);
  if (recent.length >= CONSENT_MAILS_MAX) {
    const freeAt = Date.parse(recent[0]!) + CONSENT_WINDOW_MS;
    throw new ConsentRateLimited(
      `${cmd.destination} was sent ${CONSENT_MAILS_MAX} consent mails in the last 24 hours; try again later.`,
      cmd.param,
      Math.max(1, Math.ceil((freeAt - now) / 1000)),
    );
  }
  return [
    {
      type: 'ForwardConsentMailAllowed',
      data: {
        destination: cmd.destination,
        workspaceId: cmd.workspaceId,
        forwardId: cmd.forwardId,
        allowedAt: cmd.now,
      },
    },
  ];
}
