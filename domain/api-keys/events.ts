import { z } from 'zod';
import { defineEvent, type EventOf } from '../shared/events.ts';

const allowlist = z.array(z.string()).nullable();

export const ApiKeyCreated = defineEvent(
  'ApiKeyCreated',
  z.object({
    keyId: z.string(),
    name: z.string().nullable(),
    mode: z.enum(['live', 'test']),
    scopes: z.array(z.string()),
    roleId: z.string().nullable(),
    addressAllowlist: allowlist,
    domainAllowlist: allowlist,
    expiresAt: z.string().nullable(),
    /** SHA-256 of the secret part of the token; the secret itself is never stored. */
    secretHash: z.string(),
    createdAt: z.string(),
    createdBy: z.string().nullable(),
  }),
);

export const ApiKeyRotated = defineEvent(
  'ApiKeyRotated',
  z.object({ keyId: z.string(), secretHash: z.string(), rotatedAt: z.string(), rotationCount: z.number().int() }),
);

export const ApiKeyRevoked = defineEvent('ApiKeyRevoked', z.object({ keyId: z.string(), revokedAt: z.string() }));

/** Keys moved to another role when their role was deleted. */
export const ApiKeysReassigned = defineEvent(
  'ApiKeysReassigned',
  z.object({ fromRoleId: z.string(), toRoleId: z.string(), keyIds: z.array(z.string()) }),
);

export const apiKeyEvents = [ApiKeyCreated, ApiKeyRotated, ApiKeyRevoked, ApiKeysReassigned];
export type ApiKeyEvent =
  | EventOf<typeof ApiKeyCreated>
  | EventOf<typeof ApiKeyRotated>
  | EventOf<typeof ApiKeyRevoked>
  | EventOf<typeof ApiKeysReassigned>;

/** All keys of a workspace are one aggregate: the 20-active-keys limit must hold under races. */
export const apiKeysStream = (workspaceId: string) => `ws-${workspaceId}.api-keys`;
