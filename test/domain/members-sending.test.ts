import t from 'tap';
import { sendsFrom, viewOnlyOf } from '../../domain/members/sending.ts';

const member = {
  isOwner: false,
  rolePermissions: ['emails:read', 'emails:send'],
  addresses: [] as string[],
  viewerAddresses: [] as string[],
  viewerDomains: [] as string[],
};

t.test('a viewer grant blocks sending from its addresses', async (t) => {
  const v = viewOnlyOf({ ...member, addresses: ['A@x.test', 'b@x.test'], viewerAddresses: ['A@x.test'] });
  t.same(v, { addresses: ['a@x.test'], domains: [], except: ['b@x.test'] });
  t.notOk(sendsFrom(v, 'a@X.test'), 'the viewer address, whatever its case');
  t.ok(sendsFrom(v, 'b@x.test'), 'the member address');
  t.ok(sendsFrom(v, 'c@y.test'), 'reach is checked apart');
});

t.test('a viewer domain blocks its addresses, later ones too, but an address granted as member', async (t) => {
  const v = viewOnlyOf({ ...member, addresses: ['b@x.test'], viewerDomains: ['x.test'] });
  t.notOk(sendsFrom(v, 'a@x.test'));
  t.notOk(sendsFrom(v, 'new@x.test'));
  t.ok(sendsFrom(v, 'b@x.test'), "the address's own grant decides");
  const onMemberDomain = viewOnlyOf({ ...member, addresses: ['a@x.test'], viewerAddresses: ['a@x.test'] });
  t.notOk(sendsFrom(onMemberDomain, 'a@x.test'), 'a viewer address on a member domain stays view-only');
});

t.test('nothing is blocked for the owner, addresses:all, or without viewer grants', async (t) => {
  const viewer = { ...member, addresses: ['a@x.test'], viewerAddresses: ['a@x.test'], viewerDomains: ['y.test'] };
  t.equal(viewOnlyOf({ ...viewer, isOwner: true }), null);
  t.equal(viewOnlyOf({ ...viewer, rolePermissions: [...member.rolePermissions, 'addresses:all'] }), null);
  t.equal(viewOnlyOf({ ...member, addresses: ['a@x.test'] }), null);
  t.ok(sendsFrom(null, 'a@x.test'));
});
