import t from 'tap';
import { refusal } from '../support/refusal.ts';
import { decideCreateKey, decideReassignKeys, decideRevokeKey, decideRotateKey, type CreateKey } from '../../domain/api-keys/decide.ts';
import type { ApiKeyEvent } from '../../domain/api-keys/events.ts';
import { apiKeysAggregate, type ApiKeysState } from '../../domain/api-keys/state.ts';
import { SCOPEABLE } from '../../domain/shared/permissions.ts';

const NOW = '2026-01-01T00:00:00.000Z';
const given = (events: ApiKeyEvent[]): ApiKeysState => events.reduce(apiKeysAggregate.evolve, apiKeysAggregate.initialState);
const owner = { keyId: 'owner', mode: 'live' as const, scopes: [...SCOPEABLE], addressAllowlist: null, domainAllowlist: null };

function create(overrides: Partial<CreateKey> = {}): CreateKey {
  return {
    keyId: 'k1',
    secretHash: 'h',
    name: null,
    mode: 'live',
    scopes: ['emails:send'],
    roleId: null,
    addressAllowlist: null,
    domainAllowlist: null,
    expiresAt: null,
    now: NOW,
    caller: owner,
    ...overrides,
  };
}

const created = (keyId: string, extra: Partial<Extract<ApiKeyEvent, { type: 'ApiKeyCreated' }>['data']> = {}): ApiKeyEvent => ({
  type: 'ApiKeyCreated',
  data: {
    keyId, name: null, mode: 'live', scopes: ['emails:send'], roleId: null, addressAllowlist: null, domainAllowlist: null,
    expiresAt: null, secretHash: 'h', createdAt: NOW, createdBy: null, ...extra,
  },
});

t.test('create: scopes in canonical order, allowlists normalised', async (t) => {
  const [event] = decideCreateKey(
    given([]),
    create({ scopes: ['templates:read', 'emails:send'], addressAllowlist: [' A@Example.com ', 'b@x.org', 'b@x.org'], domainAllowlist: ['EXAMPLE.com'] }),
  );
  t.same(event, created('k1', { scopes: ['emails:send', 'templates:read'], addressAllowlist: ['b@x.org'], domainAllowlist: ['example.com'], createdBy: 'owner' }));
});

t.test('create: never wider than the caller', async (t) => {
  const narrow = { ...owner, scopes: ['emails:send' as const], domainAllowlist: ['example.com'] };
  t.match(refusal(() => decideCreateKey(given([]), create({ scopes: ['emails:send', 'emails:read'], caller: narrow }))), { code: 'beyond_caller_authority', param: 'scopes.1' });
  t.match(refusal(() => decideCreateKey(given([]), create({ caller: narrow }))), { code: 'beyond_caller_authority', param: 'addressAllowlist' });
  t.match(refusal(() => decideCreateKey(given([]), create({ caller: narrow, addressAllowlist: ['a@other.org'] }))), { code: 'beyond_caller_authority', param: 'addressAllowlist.0' });
  t.equal(decideCreateKey(given([]), create({ caller: narrow, addressAllowlist: ['a@example.com'] })).length, 1);
  t.match(refusal(() => decideCreateKey(given([]), create({ caller: { ...owner, mode: 'test' } }))), { code: 'beyond_caller_authority', param: 'mode' });
});

t.test('create: console-only permissions are never a key scope', async (t) => {
  t.match(refusal(() => decideCreateKey(given([]), create({ scopes: ['emails:send', 'billing:read'] }))), { code: 'invalid_parameter', param: 'scopes.1' });
});

t.test('create: 20 active keys, revoked and expired ones do not count', async (t) => {
  const twenty = Array.from({ length: 20 }, (_, i) => created(`k${i}`));
  t.match(refusal(() => decideCreateKey(given(twenty), create({ keyId: 'new' }))), { code: 'workspace_limit_reached' });
  const oneRevoked = [...twenty, { type: 'ApiKeyRevoked', data: { keyId: 'k3', revokedAt: NOW } } as ApiKeyEvent];
  t.equal(decideCreateKey(given(oneRevoked), create({ keyId: 'new' })).length, 1);
  const oneExpired = [...twenty.slice(1), created('k0', { expiresAt: '2025-12-31T00:00:00.000Z' })];
  t.equal(decideCreateKey(given(oneExpired), create({ keyId: 'new' })).length, 1);
  t.match(refusal(() => decideCreateKey(given([]), create({ expiresAt: NOW }))), { code: 'invalid_parameter', param: 'expiresAt' });
});

t.test('rotate: counts rotations; refuses missing, revoked and expired keys', async (t) => {
  t.same(decideRotateKey(given([created('k1')]), { keyId: 'k1', secretHash: 'h2', now: NOW }), [
    { type: 'ApiKeyRotated', data: { keyId: 'k1', secretHash: 'h2', rotatedAt: NOW, rotationCount: 1 } },
  ]);
  const rotatedOnce = given([created('k1'), { type: 'ApiKeyRotated', data: { keyId: 'k1', secretHash: 'h2', rotatedAt: NOW, rotationCount: 1 } }]);
  t.equal((decideRotateKey(rotatedOnce, { keyId: 'k1', secretHash: 'h3', now: NOW })[0]!.data as { rotationCount: number }).rotationCount, 2);
  t.match(refusal(() => decideRotateKey(given([]), { keyId: 'k1', secretHash: 'h', now: NOW })), { code: 'resource_not_found' });
  t.match(refusal(() => decideRotateKey(given([created('k1'), { type: 'ApiKeyRevoked', data: { keyId: 'k1', revokedAt: NOW } }]), { keyId: 'k1', secretHash: 'h', now: NOW })), { code: 'revoked' });
  t.match(refusal(() => decideRotateKey(given([created('k1', { expiresAt: NOW })]), { keyId: 'k1', secretHash: 'h', now: NOW })), { code: 'expired' });
});

t.test('revoke once; reassign moves only unrevoked keys of the role', async (t) => {
  t.same(decideRevokeKey(given([created('k1')]), { keyId: 'k1', now: NOW }), [{ type: 'ApiKeyRevoked', data: { keyId: 'k1', revokedAt: NOW } }]);
  const revoked = given([created('k1'), { type: 'ApiKeyRevoked', data: { keyId: 'k1', revokedAt: NOW } }]);
  t.match(refusal(() => decideRevokeKey(revoked, { keyId: 'k1', now: NOW })), { code: 'resource_not_found' });
  const state = given([
    created('a', { roleId: 'role_a' }),
    created('b', { roleId: 'role_a' }),
    created('c', { roleId: 'role_b' }),
    { type: 'ApiKeyRevoked', data: { keyId: 'b', revokedAt: NOW } },
  ]);
  t.same(decideReassignKeys(state, { fromRoleId: 'role_a', toRoleId: 'role_c' }), [
    { type: 'ApiKeysReassigned', data: { fromRoleId: 'role_a', toRoleId: 'role_c', keyIds: ['a'] } },
  ]);
  t.same(decideReassignKeys(state, { fromRoleId: 'role_x', toRoleId: 'role_c' }), []);
});
