import { z } from 'zod';
import { askStepUp, type StepUpCaller, stepUpStatus, verifyStepUp } from '../../../commands/step-up/handlers.ts';
import type { Credential } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { ApiError } from '../../errors/api-error.ts';
import { operation, type Operation } from '../../route.ts';
import { dateTime } from '../../schemas.ts';

const method = z.enum(['email', 'totp']);

const status = z
  .object({
    object: z.literal('step_up'),
    elevated: z.boolean(),
    elevatedUntil: dateTime.nullable(),
    method: method.describe(
      '`totp` when the person has two-factor on (an authenticator or backup code), else `email`.',
    ),
    minutes: z.number().int().describe('How long a verification elevates the app: 60.'),
  })
  .meta({ id: 'StepUp' });

const challenge = z
  .object({
    object: z.literal('step_up_challenge'),
    method,
    reused: z.boolean().describe('A code asked for earlier is still waiting; nothing new was sent.'),
    sentTo: z.string().optional().describe('For `email`: where the code went, masked.'),
  })
  .meta({ id: 'StepUpChallenge' });

const ask = z.strictObject({
  resend: z.boolean().default(false).describe('A new code even when one is waiting (it replaces it).'),
  method: method.optional().describe("Defaults to the person's method (`GET /security/step-up`)."),
});

const verify = z.strictObject({
  code: z.string().min(1).max(64).describe('The six-digit mailed or authenticator code, or a backup code.'),
});

/** The app and person a token speaks for; an API key is never asked for step-up. */
function caller(c: Credential): StepUpCaller {
  if (c.kind !== 'oauth' || !c.clientId || !c.userId)
    throw new ApiError('step_up_not_applicable', 'Step-up is for OAuth access tokens; API keys are never asked.');
  return { clientId: c.clientId, userId: c.userId };
}

const NOT_A_KEY = 'Needs an OAuth access token, no scope; an API key is answered `step_up_not_applicable`.';

export const stepUpOperations = (deps: ApiDeps): Operation[] => [
  operation({
    method: 'GET',
    url: '/security/step-up',
    operationId: 'getStepUp',
    summary: 'Whether the app is elevated for the person',
    description: NOT_A_KEY,
    scope: null,
    admit: caller,
    errors: ['step_up_not_applicable'],
    response: status,
    handler: async ({ credential }) =>
      stepUpStatus(
        deps.commands,
        deps.stepUp,
        caller(credential),
        credential.elevatedUntil ?? null,
        new Date().toISOString(),
      ),
  }),

  operation({
    method: 'POST',
    url: '/security/step-up',
    operationId: 'createStepUpChallenge',
    summary: 'Ask the person for a step-up code',
    description: `${NOT_A_KEY} A code waiting for this app is reused unless \`resend\` is true. Codes work 10 minutes; 5 new ones per hour and 20 per 24 hours per app and person.`,
    scope: null,
    openToTestKeys: true,
    idempotency: false,
    body: ask,
    response: challenge,
    admit: caller,
    errors: ['step_up_not_applicable', 'step_up_throttled', 'step_up_locked', 'step_up_undeliverable'],
    handler: async ({ credential, body }) =>
      askStepUp(deps.commands, deps.stepUp, caller(credential), body, new Date().toISOString()),
  }),

  operation({
    method: 'POST',
    url: '/security/step-up/verify',
    operationId: 'verifyStepUp',
    summary: 'Verify a step-up code',
    description: `${NOT_A_KEY} The right code elevates the app for the person for 60 minutes. Five wrong tries lock the code; 10 wrong codes in 24 hours from this app, or 20 from all the person's apps, pause verification.`,
    scope: null,
    openToTestKeys: true,
    idempotency: false,
    body: verify,
    response: status,
    admit: caller,
    errors: ['step_up_not_applicable', 'step_up_code_invalid', 'step_up_code_expired', 'step_up_locked'],
    handler: async ({ credential, body }) =>
      verifyStepUp(deps.commands, deps.stepUp, caller(credential), body.code, new Date().toISOString()),
  }),
];
