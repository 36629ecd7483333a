import t from 'tap';
import { grantRefusal, intersect, requestedScopes, tokenAuthority } from '../../domain/oauth/authority.ts';

t.test('an app asks for scopes a token may hold, implied ones added', async (t) => {
  t.same(requestedScopes('roles:write emails:read'), {
    scopes: ['emails:read', 'members:read', 'roles:read', 'roles:write'],
  });
  t.same(requestedScopes('emails:read  emails:read'), { scopes: ['emails:read'] }, 'repeated and spaced');
  t.match(requestedScopes('addresses:all'), { refused: /kept for the console/ }, 'console-only');
  t.match(requestedScopes('emails:read api-keys:read'), { refused: /api-keys:read/ });
  t.match(requestedScopes('emails:reed'), { refused: /not a scope/ });
  t.match(requestedScopes(''), { refused: /at least one/ });
  t.match(requestedScopes(undefined), { refused: /at least one/ });
});

t.test('a token holds the approved scopes within the role, and reaches within the grants', async (t) => {
  const whole = { addressAllowlist: null, domainAllowlist: null };
  const approval = { scopes: ['emails:read', 'emails:send', 'members:read'] as const, ...whole };
  const member = { isOwner: false, rolePermissions: ['emails:read', 'members:read'], addresses: [], domains: [] };
  t.same(tokenAuthority({ ...approval, scopes: [...approval.scopes] }, member), {
    scopes: ['emails:read', 'members:read'],
    addressAllowlist: [],
    domainAllowlist: [],
  });
  t.same(
    tokenAuthority({ ...approval, scopes: [...approval.scopes] }, { ...member, isOwner: true, rolePermissions: [] }),
    { scopes: [...approval.scopes], ...whole },
    'the owner: everything approved, every address',
  );
  t.same(
    tokenAuthority(
      { scopes: ['emails:read'], addressAllowlist: ['a@x.test'], domainAllowlist: null },
      { ...member, rolePermissions: ['emails:read', 'addresses:all'] },
    ),
    { scopes: ['emails:read'], addressAllowlist: ['a@x.test'], domainAllowlist: null },
    'addresses:all reaches all; the approval narrows',
  );
  t.same(
    tokenAuthority(
      { scopes: ['emails:read'], ...whole },
      { ...member, addresses: ['A@Y.test', 'b@x.test'], domains: ['x.test'] },
    ),
    { scopes: ['emails:read'], addressAllowlist: ['a@y.test'], domainAllowlist: ['x.test'] },
    'grants by name, normalised',
  );
});

t.test('two narrowings meet where both reach', async (t) => {
  t.same(
    intersect(
      { addressAllowlist: ['a@x.test', 'b@y.test'], domainAllowlist: ['z.test'] },
      { addressAllowlist: ['c@z.test'], domainAllowlist: ['x.test', 'z.test'] },
    ),
    { addressAllowlist: ['a@x.test'], domainAllowlist: ['z.test'] },
    'an address within the other side, a shared domain (its addresses then dropped)',
  );
  t.same(
    intersect(
      { addressAllowlist: [], domainAllowlist: ['x.test'] },
      { addressAllowlist: ['a@x.test'], domainAllowlist: [] },
    ),
    { addressAllowlist: ['a@x.test'], domainAllowlist: [] },
  );
  t.same(intersect({ addressAllowlist: null, domainAllowlist: null }, { addressAllowlist: [], domainAllowlist: [] }), {
    addressAllowlist: [],
    domainAllowlist: [],
  });
});

t.test('why an approval no longer stands', async (t) => {
  const now = new Date('2026-01-01T12:00:00Z');
  const ok = { revoked: false, expiresAt: new Date('2026-02-01T00:00:00Z'), workspaceExists: true, isMember: true };
  t.equal(grantRefusal(ok, now), null);
  t.equal(grantRefusal({ ...ok, expiresAt: null }, now), null, 'no end');
  t.equal(grantRefusal({ ...ok, expiresAt: now }, now), 'grant_expired', 'ends at its time');
  t.equal(grantRefusal({ ...ok, isMember: false }, now), 'grant_access_lost');
  t.equal(grantRefusal({ ...ok, workspaceExists: false, isMember: false }, now), 'grant_workspace_gone');
  t.equal(grantRefusal({ ...ok, revoked: true, isMember: false }, now), 'grant_required', 'disconnected first');
});
