import { allowlistsWithin, normaliseAllowlists, type Allowlists } from '../shared/allowlists.ts';
import { fail } from '../shared/errors.ts';
import { CONSOLE_ONLY, canonical, type Permission } from '../shared/permissions.ts';
import type { ApiKeyEvent } from './events.ts';
import { isActive, type ApiKeysState } from './state.ts';

export const ACTIVE_KEY_LIMIT = 20;

/** The authority of whoever creates or revokes a key: the key may never reach further. */
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

/** What a key may reach: what a caller's authority is measured against. */
interface KeyReach extends Allowlists {
  mode: 'live' | 'test';
  scopes: readonly Permission[];
}

/**
 * Why a key (one to be made, or one to be revoked) reaches beyond the caller, or null when it sits
 * inside: every scope held by the caller, a live key only for a live caller, allowlists inside the
 * caller's. A key may act only on keys it could have made.
 */
function beyondCaller(key: KeyReach, caller: CallerAuthority): { param: string; reason: string } | null {
  const scope = key.scopes.findIndex((s) => !caller.scopes.includes(s));
  if (scope >= 0)
    return { param: `scopes.${scope}`, reason: `holds \`${key.scopes[scope]}\`, which the calling key does not` };
  if (caller.mode === 'test' && key.mode === 'live')
    return { param: 'mode', reason: 'is a live key, and a test key never touches live keys' };
  const within = allowlistsWithin(key, caller);
  if (!within.ok) return { param: within.param, reason: 'reaches addresses the calling key cannot' };
  return null;
}

export function decideCreateApiKey(state: ApiKeysState, cmd: CreateKey): ApiKeyEvent[] {
  cmd.scopes.forEach((s, i) => {
    if (CONSOLE_ONLY.has(s))
      fail('invalid_parameter', `\`${s}\` is a console-only permission; no key can hold it.`, `scopes.${i}`);
  });
  const allowlists = normaliseAllowlists(cmd);
  const beyond = beyondCaller({ mode: cmd.mode, scopes: cmd.scopes, ...allowlists }, cmd.caller);
  if (beyond) fail('beyond_caller_authority', `The new key ${beyond.reason}.`, beyond.param);
  if (cmd.expiresAt !== null && cmd.expiresAt <= cmd.now)
    fail('invalid_parameter', '`expiresAt` must be in the future.', 'expiresAt');
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

export function decideRotateApiKey(
  state: ApiKeysState,
  cmd: { keyId: string; secretHash: string; now: string },
): ApiKeyEvent[] {
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

/** A key revokes itself, or keys inside its own authority (the owner's key only from one as wide). */
export function decideRevokeApiKey(
  state: ApiKeysState,
  cmd: { keyId: string; now: string; caller: CallerAuthority },
): ApiKeyEvent[] {
  const key = state.keys.get(cmd.keyId);
  if (!key || key.revokedAt !== null) fail('resource_not_found', 'No such API key.', 'id');
  const beyond = cmd.keyId === cmd.caller.keyId ? null : beyondCaller(key, cmd.caller);
  if (beyond)
    fail(
      'beyond_caller_authority',
      `The key ${beyond.reason}; a key revokes only keys inside its own authority.`,
      'id',
    );
  return [{ type: 'ApiKeyRevoked', data: { keyId: cmd.keyId, revokedAt: cmd.now } }];
}

export function decideReassignApiKeys(
  state: ApiKeysState,
  cmd: { fromRoleId: string; toRoleId: string },
): ApiKeyEvent[] {
  const keyIds = [...state.keys.entries()]
    .filter(([, k]) => k.revokedAt === null && k.roleId === cmd.fromRoleId)
    .map(([id]) => id);
  if (keyIds.length === 0) return [];
  return [{ type: 'ApiKeysReassigned', data: { fromRoleId: cmd.fromRoleId, toRoleId: cmd.toRoleId, keyIds } }];
}
