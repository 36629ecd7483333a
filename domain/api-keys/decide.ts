import { allowlistsWithin, normaliseAllowlists, type Allowlists } from '../shared/allowlists.ts';
import { fail } from '../shared/errors.ts';
import { CONSOLE_ONLY, canonical, type Permission } from '../shared/permissions.ts';
import type { ApiKeyEvent } from './events.ts';
import { isActive, type ApiKeysState } from './state.ts';

export const ACTIVE_KEY_LIMIT = 20;

/** The authority of whoever creates a key: a new key may never reach further. */
export interface CallerAuthority extends Allowlists {
  keyId: string | null;
  mode: 'live' | 'test';
  scopes: Permission[];
}

export interface CreateKey extends Allowlists {
  keyId: string;
  secretHash: string;
  name: string | null;
  mode: 'live' | 'test';
  scopes: Permission[];
  roleId: string | null;
  expiresAt: string | null;
  now: string;
  caller: CallerAuthority;
}

export function decideCreateKey(state: ApiKeysState, cmd: CreateKey): ApiKeyEvent[] {
  cmd.scopes.forEach((s, i) => {
    if (CONSOLE_ONLY.has(s)) fail('invalid_parameter', `\`${s}\` is a console-only permission; no key can hold it.`, `scopes.${i}`);
  });
  cmd.scopes.forEach((s, i) => {
    if (!cmd.caller.scopes.includes(s)) fail('beyond_caller_authority', `The calling key does not hold \`${s}\`.`, `scopes.${i}`);
  });
  if (cmd.caller.mode === 'test' && cmd.mode === 'live') fail('beyond_caller_authority', 'A test key cannot create live keys.', 'mode');
  const allowlists = normaliseAllowlists(cmd);
  const within = allowlistsWithin(allowlists, cmd.caller);
  if (!within.ok) fail('beyond_caller_authority', 'The new key would reach addresses the calling key cannot.', within.param);
  if (cmd.expiresAt !== null && cmd.expiresAt <= cmd.now) fail('invalid_parameter', '`expiresAt` must be in the future.', 'expiresAt');
  const active = [...state.keys.values()].filter((k) => isActive(k, cmd.now)).length;
  if (active >= ACTIVE_KEY_LIMIT) {
    fail('workspace_limit_reached', `A workspace holds at most ${ACTIVE_KEY_LIMIT} active API keys.`);
  }
  return [
    {
      type: 'ApiKeyCreated',
      data: {
        keyId: cmd.keyId,
        name: cmd.name,
        mode: cmd.mode,
        scopes: canonical(cmd.scopes),
        roleId: cmd.roleId,
        ...allowlists,
        expiresAt: cmd.expiresAt,
        secretHash: cmd.secretHash,
        createdAt: cmd.now,
        createdBy: cmd.caller.keyId,
      },
    },
  ];
}

export function decideRotateKey(state: ApiKeysState, cmd: { keyId: string; secretHash: string; now: string }): ApiKeyEvent[] {
  const key = state.keys.get(cmd.keyId);
  if (!key) fail('resource_not_found', 'No such API key.', 'id');
  if (key.revokedAt !== null) fail('revoked', 'The key was revoked.');
  if (key.expiresAt !== null && key.expiresAt <= cmd.now) fail('expired', 'The key has expired.');
  return [
    {
      type: 'ApiKeyRotated',
      data: { keyId: cmd.keyId, secretHash: cmd.secretHash, rotatedAt: cmd.now, rotationCount: key.rotationCount + 1 },
    },
  ];
}

export function decideRevokeKey(state: ApiKeysState, cmd: { keyId: string; now: string }): ApiKeyEvent[] {
  const key = state.keys.get(cmd.keyId);
  if (!key || key.revokedAt !== null) fail('resource_not_found', 'No such API key.', 'id');
  return [{ type: 'ApiKeyRevoked', data: { keyId: cmd.keyId, revokedAt: cmd.now } }];
}

export function decideReassignKeys(state: ApiKeysState, cmd: { fromRoleId: string; toRoleId: string }): ApiKeyEvent[] {
  const keyIds = [...state.keys.entries()].filter(([, k]) => k.revokedAt === null && k.roleId === cmd.fromRoleId).map(([id]) => id);
  if (keyIds.length === 0) return [];
  return [{ type: 'ApiKeysReassigned', data: { fromRoleId: cmd.fromRoleId, toRoleId: cmd.toRoleId, keyIds } }];
}
