import t from 'tap';
import { refusal } from '../support/refusal.ts';
import {
  decideCreateApiKey,
  decideReassignApiKeys,
  decideRevokeApiKey,
  decideRotateApiKey,
  type CreateKey,
} from '../../domain/api-keys/decide.ts';
import type { ApiKeyEvent } from '../../domain/api-keys/events.ts';
import { apiKeysAggregate, type ApiKeysState } from '../../domain/api-keys/state.ts';
import { SCOPEABLE } from '../../domain/shared/permissions.ts';

const NOW = '2026-01-01T00:00:00.000Z';
const given = (events: ApiKeyEvent[]): ApiKeysState =>
  events.reduce(apiKeysAggregate.evolve, apiKeysAggregate.initialState);
const owner = {
  keyId: 'owner',
  mode: 'live' as const,
  scopes: [...SCOPEABLE],
  addressAllowlist: null,
  domainAllowlist: null,
};

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

const created = (
  keyId: string,
  extra: Partial<Extract<ApiKeyEvent, { type: 'ApiKeyCreated' }>['data']> = {},
): ApiKeyEvent => ({
  type: 'ApiKeyCreated',
  data: {
    keyId,
    name: null,
    mode: 'live',
    scopes: ['emails:send'],
    roleId: null,
    addressAllowlist: null,
    domainAllowlist: null,
    expiresAt: null,
    secretHash: 'h',
    createdAt: NOW,
    createdBy: null,
    ...extra,
  },
});

t.test('create: scopes in canonical order, allowlists normalised', async (t) => {
  const [event] = decideCreateApiKey(
    given([]),
    create({
      scopes: ['templates:read', 'emails:send'],
      addressAllowlist: [' A@Example.com ', 'b@x.org', 'b@x.org'],
      domainAllowlist: ['EXAMPLE.com'],
    }),
  );
  t.same(
    event,
    created('k1', {
      scopes: ['emails:send', 'templates:read'],
      addressAllowlist: ['b@x.org'],
      domainAllowlist: ['example.com'],
      createdBy: 'owner',
    }),
  );
});

t.test('create: never wider than the caller', async (t) => {
  const narrow = { ...owner, scopes: ['emails:send' as const], domainAllowlist: ['example.com'] };
  t.match(
    refusal(() => decideCreateApiKey(given([]), create({ scopes: ['emails:send', 'emails:read'], caller: narrow }))),
    { code: 'beyond_caller_authority', param: 'scopes.1' },
  );
  t.match(
    refusal(() => decideCreateApiKey(given([]), create({ caller: narrow }))),
    { code: 'beyond_caller_authority', param: 'addressAllowlist' },
  );
  t.match(
    refusal(() => decideCreateApiKey(given([]), create({ caller: narrow, addressAllowlist: ['a@other.org'] }))),
    { code: 'beyond_caller_authority', param: 'addressAllowlist.0' },
  );
  t.equal(decideCreateApiKey(given([]), create({ caller: narrow, addressAllowlist: ['a@example.com'] })).length, 1);
  t.match(
    refusal(() => decideCreateApiKey(given([]), create({ caller: { ...owner, mode: 'test' } }))),
    { code: 'beyond_caller_authority', param: 'mode' },
  );
});

t.test('create: console-only permissions are never a key scope', async (t) => {
  t.match(
    refusal(() => decideCreateApiKey(given([]), create({ scopes: ['emails:send', 'billing:read'] }))),
    { code: 'invalid_parameter', param: 'scopes.1' },
  );
});

t.test('create: 20 active keys, revoked and expired ones do not count', async (t) => {
  const twenty = Array.from({ length: 20 }, (_, i) => created(`k${i}`));
  t.match(
    refusal(() => decideCreateApiKey(given(twenty), create({ keyId: 'new' }))),
    { code: 'workspace_limit_reached' },
  );
  const oneRevoked = [...twenty, { type: 'ApiKeyRevoked', data: { keyId: 'k3', revokedAt: NOW } } as ApiKeyEvent];
  t.equal(decideCreateApiKey(given(oneRevoked), create({ keyId: 'new' })).length, 1);
  const oneExpired = [...twenty.slice(1), created('k0', { expiresAt: '2025-12-31T00:00:00.000Z' })];
  t.equal(decideCreateApiKey(given(oneExpired), create({ keyId: 'new' })).length, 1);
  t.match(
    refusal(() => decideCreateApiKey(given([]), create({ expiresAt: NOW }))),
    { code: 'invalid_parameter', param: 'expiresAt' },
  );
});

t.test('rotate: counts rotations; refuses missing, revoked and expired keys', async (t) => {
  t.same(decideRotateApiKey(given([created('k1')]), { keyId: 'k1', secretHash: 'h2', now: NOW }), [
    { type: 'ApiKeyRotated', data: { keyId: 'k1', secretHash: 'h2', rotatedAt: NOW, rotationCount: 1 } },
  ]);
  const rotatedOnce = given([
    created('k1'),
    { type: 'ApiKeyRotated', data: { keyId: 'k1', secretHash: 'h2', rotatedAt: NOW, rotationCount: 1 } },
  ]);
  t.equal(
    (decideRotateApiKey(rotatedOnce, { keyId: 'k1', secretHash: 'h3', now: NOW })[0]!.data as { rotationCount: number })
      .rotationCount,
    2,
  );
  t.match(
    refusal(() => decideRotateApiKey(given([]), { keyId: 'k1', secretHash: 'h', now: NOW })),
    { code: 'resource_not_found' },
  );
  t.match(
    refusal(() =>
      decideRotateApiKey(given([created('k1'), { type: 'ApiKeyRevoked', data: { keyId: 'k1', revokedAt: NOW } }]), {
        keyId: 'k1',
        secretHash: 'h',
        now: NOW,
      }),
    ),
    { code: 'revoked' },
  );
  t.match(
    refusal(() =>
      decideRotateApiKey(given([created('k1', { expiresAt: NOW })]), { keyId: 'k1', secretHash: 'h', now: NOW }),
    ),
    { code: 'expired' },
  );
});

t.test("revoke: only keys inside the caller's authority, or itself", async (t) => {
  const state = given([
    created('owner', { scopes: [...SCOPEABLE] }),
    created('wide', { scopes: ['emails:send', 'keys:manage'] }),
    created('narrow', { scopes: ['keys:manage'], addressAllowlist: ['a@example.com'] }),
    created('test', { mode: 'test', scopes: ['keys:manage'], addressAllowlist: ['a@example.com'] }),
    created('other', { mode: 'test', scopes: ['keys:manage'], addressAllowlist: ['b@example.com'] }),
  ]);
  const authority = (keyId: string) => {
    const k = state.keys.get(keyId)!;
    return {
      keyId,
      mode: k.mode,
      scopes: k.scopes,
      addressAllowlist: k.addressAllowlist,
      domainAllowlist: k.domainAllowlist,
    };
  };
  const revoke = (keyId: string, by: string) => decideRevokeApiKey(state, { keyId, now: NOW, caller: authority(by) });
  t.match(
    refusal(() => revoke('owner', 'test')),
    { code: 'beyond_caller_authority', param: 'id' },
    "a narrowed test key cannot revoke the owner's key",
  );
  t.match(
    refusal(() => revoke('wide', 'test')),
    { code: 'beyond_caller_authority', param: 'id' },
    'nor a wider live key',
  );
  t.match(
    refusal(() => revoke('narrow', 'test')),
    { code: 'beyond_caller_authority', param: 'id' },
    'nor a live key as narrow as itself',
  );
  t.match(
    refusal(() => revoke('other', 'test')),
    { code: 'beyond_caller_authority', param: 'id' },
    'nor a test key reaching other addresses',
  );
  t.match(
    refusal(() => revoke('owner', 'wide')),
    { code: 'beyond_caller_authority', param: 'id' },
    'a live key holding fewer scopes cannot revoke the owner key',
  );
  t.equal(revoke('test', 'test').length, 1, 'itself');
  t.equal(revoke('test', 'narrow').length, 1, 'a live key revokes a test key inside its authority');
  t.equal(revoke('narrow', 'wide').length, 1, 'and a narrower live key');
  t.equal(revoke('wide', 'owner').length, 1, "the owner's key revokes any");
  t.equal(revoke('owner', 'owner').length, 1);
});

t.test('revoke once; reassign moves only unrevoked keys of the role', async (t) => {
  t.same(decideRevokeApiKey(given([created('k1')]), { keyId: 'k1', now: NOW, caller: owner }), [
    { type: 'ApiKeyRevoked', data: { keyId: 'k1', revokedAt: NOW } },
  ]);
  const revoked = given([created('k1'), { type: 'ApiKeyRevoked', data: { keyId: 'k1', revokedAt: NOW } }]);
  t.match(
    refusal(() => decideRevokeApiKey(revoked, { keyId: 'k1', now: NOW, caller: owner })),
    { code: 'resource_not_found' },
  );
  const state = given([
    created('a', { roleId: 'role_a' }),
    created('b', { roleId: 'role_a' }),
    created('c', { roleId: 'role_b' }),
    { type: 'ApiKeyRevoked', data: { keyId: 'b', revokedAt: NOW } },
  ]);
  t.same(decideReassignApiKeys(state, { fromRoleId: 'role_a', toRoleId: 'role_c' }), [
    { type: 'ApiKeysReassigned', data: { fromRoleId: 'role_a', toRoleId: 'role_c', keyIds: ['a'] } },
  ]);
  t.same(decideReassignApiKeys(state, { fromRoleId: 'role_x', toRoleId: 'role_c' }), []);
});
