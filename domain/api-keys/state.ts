import { isPermission, type Permission } from '../shared/permissions.ts';
import type { ApiKeyEvent } from './events.ts';

export interface KeyState {
  mode: 'live' | 'test';
  /** What the key was granted, and the addresses it reaches: how far it reaches, whatever its role. */
  scopes: Permission[];
  addressAllowlist: string[] | null;
  domainAllowlist: string[] | null;
  roleId: string | null;
  expiresAt: string | null;
  revokedAt: string | null;
  rotationCount: number;
}

export interface ApiKeysState {
  keys: Map<string, KeyState>;
}

export const apiKeysAggregate = {
  initialState: { keys: new Map() } as ApiKeysState,
  evolve(state: ApiKeysState, event: ApiKeyEvent): ApiKeysState {
    const keys = new Map(state.keys);
    switch (event.type) {
      case 'ApiKeyCreated': {
        const d = event.data;
        keys.set(d.keyId, {
          mode: d.mode,
          scopes: d.scopes.filter(isPermission),
          addressAllowlist: d.addressAllowlist,
          domainAllowlist: d.domainAllowlist,
          roleId: d.roleId,
          expiresAt: d.expiresAt,
          revokedAt: null,
          rotationCount: 0,
        });
        break;
      }
      case 'ApiKeyRotated': {
        const k = keys.get(event.data.keyId);
        if (k) keys.set(event.data.keyId, { ...k, rotationCount: event.data.rotationCount });
        break;
      }
      case 'ApiKeyRevoked': {
        const k = keys.get(event.data.keyId);
        if (k) keys.set(event.data.keyId, { ...k, revokedAt: event.data.revokedAt });
        break;
      }
      case 'ApiKeysReassigned':
        for (const id of event.data.keyIds) {
          const k = keys.get(id);
          if (k) keys.set(id, { ...k, roleId: event.data.toRoleId });
        }
        break;
    }
    return { keys };
  },
};

export function isActive(key: KeyState, now: string): boolean {
  return key.revokedAt === null && (key.expiresAt === null || key.expiresAt > now);
}
