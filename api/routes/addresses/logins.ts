import { z } from 'zod';
import { createAppPassword, revokeAppPassword, setAddressLogin } from '../../../commands/addresses/handlers.ts';
import { USERNAME_PATTERN } from '../../../domain/address-usernames/decide.ts';
import { actorOf, type Credential } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { ApiError } from '../../errors/api-error.ts';
import { reachOf } from '../../narrowing.ts';
import { operation, type Operation } from '../../route.ts';
import { addressOr404, addressView, appPasswordView, viewAddress } from './views.ts';

/**
 * A login or an app password lets an SMTP client send as the address: a credential that may not
 * send mail itself cannot hand that out (403 `mailbox_login_forbidden`).
 */
function requireSending(credential: Credential): void {
  if (!credential.scopes.includes('emails:send'))
    throw new ApiError(
      'mailbox_login_forbidden',
      'A login or app password sends mail as the address: the credential needs the `emails:send` scope as well.',
      null,
      403,
    );
}

export const loginOperations = (deps: ApiDeps): Operation[] => [
  operation({
    method: 'PUT',
    url: '/addresses/:id/login',
    operationId: 'setAddressLogin',
    errors: ['resource_not_found', 'username_taken', 'username_locked', 'mailbox_login_forbidden'],
    stepUp: true,
    summary: 'Set the login name (setAddressLogin)',
    description:
      'Scope: `domains:write`, and `emails:send` (403 `mailbox_login_forbidden`). The name SMTP clients log in with: a custom ' +
      'name unique across the service (409 `username_taken`), or null for the address itself. It cannot change while app ' +
      'passwords exist (409 `username_locked`).',
    scope: 'domains:write',
    params: z.strictObject({ id: z.string().max(400) }),
    body: z.strictObject({
      username: z
        .string()
        .trim()
        .toLowerCase()
        .regex(
          USERNAME_PATTERN,
          '3 to 64 of letters, digits, `.`, `_` and `-`, starting and ending with a letter or digit',
        )
        .nullable(),
    }),
    response: addressView,
    handler: async ({ credential, params, body, request }) => {
      requireSending(credential);
      const row = await addressOr404(deps.db, credential.workspaceId, reachOf(credential), params.id);
      await setAddressLogin(
        deps.commands,
        actorOf(credential, request.id),
        row.id,
        body.username,
        new Date().toISOString(),
      );
      return viewAddress(deps, await addressOr404(deps.db, credential.workspaceId, null, row.id));
    },
  }),

  operation({
    method: 'POST',
    url: '/addresses/:id/app-passwords',
    operationId: 'createAppPassword',
    errors: ['resource_not_found', 'mailbox_login_forbidden', 'workspace_limit_reached'],
    stepUp: true,
    summary: 'Create an app password (createAppPassword)',
    description:
      'Scope: `domains:write`, and `emails:send` (403 `mailbox_login_forbidden`). The password is in this answer only; it is ' +
      'stored as a scrypt hash. At most 20 per address (422 `workspace_limit_reached`).',
    scope: 'domains:write',
    params: z.strictObject({ id: z.string().max(400) }),
    body: z.strictObject({ name: z.string().trim().min(1).max(64) }),
    status: 201,
    response: appPasswordView.extend({
      username: z.string().describe('The login name to use with it.'),
      password: z.string().describe('Shown only here.'),
    }),
    handler: async ({ credential, params, body, request }) => {
      requireSending(credential);
      const row = await addressOr404(deps.db, credential.workspaceId, reachOf(credential), params.id);
      const now = new Date().toISOString();
      const { appPasswordId, password } = await createAppPassword(
        deps.commands,
        actorOf(credential, request.id),
        row.id,
        body.name,
        now,
      );
      return {
        object: 'app_password' as const,
        id: appPasswordId,
        name: body.name,
        createdAt: now,
        username: row.username ?? row.address,
        password,
      };
    },
  }),

  operation({
    method: 'DELETE',
    url: '/addresses/:id/app-passwords/:appPasswordId',
    operationId: 'deleteAppPassword',
    errors: ['resource_not_found'],
    stepUp: true,
    summary: 'Revoke an app password',
    description: 'Scope: `domains:write`. Clients using it can no longer log in.',
    scope: 'domains:write',
    params: z.strictObject({ id: z.string().max(400), appPasswordId: z.string().max(400) }),
    response: z.object({ object: z.literal('app_password'), id: z.string(), deleted: z.literal(true) }),
    handler: async ({ credential, params, request }) => {
      const row = await addressOr404(deps.db, credential.workspaceId, reachOf(credential), params.id);
      await revokeAppPassword(
        deps.commands,
        actorOf(credential, request.id),
        row.id,
        params.appPasswordId,
        new Date().toISOString(),
      );
      return { object: 'app_password' as const, id: params.appPasswordId, deleted: true as const };
    },
  }),
];
