import type { Kysely } from 'kysely';
import { z } from 'zod';
import { invitationExpiry } from '../../../domain/members/decide.ts';
import { ACCESS } from '../../../domain/members/events.ts';
import { idPatterns } from '../../../domain/shared/ids.ts';
import { PERMISSIONS } from '../../../domain/shared/permissions.ts';
import {
  findMember,
  grantsOf,
  type GrantRow,
  type InvitationRow,
  type MemberRow,
} from '../../../projections/members/queries.ts';
import type { ReadModels } from '../../../projections/tables.ts';
import { lookup } from '../../lookups.ts';

const access = z.enum(ACCESS);

export const memberView = z.object({
  object: z.literal('member'),
  userId: z.string(),
  email: z.string(),
  name: z.string(),
  image: z.string().nullable(),
  isOwner: z.boolean(),
  role: z
    .object({ id: z.string().nullable(), name: z.string(), builtin: z.string().nullable() })
    .nullable()
    .describe('null when the role was deleted from under the member (it then holds no permissions).'),
  implied: z.boolean(),
  permissions: z.array(z.string()),
  addresses: z.array(z.object({ addressId: z.string(), address: z.string().nullable(), access })),
  domains: z.array(z.object({ domainId: z.string(), domain: z.string().nullable(), access })),
  createdAt: z.string().nullable(),
});
type MemberView = z.infer<typeof memberView>;

export const invitationView = z.object({
  object: z.literal('invitation'),
  id: z.string(),
  email: z.string(),
  roleId: z.string(),
  addressIds: z.array(z.string()),
  domainIds: z.array(z.string()),
  access,
  invitedAt: z.string(),
  expiresAt: z.string(),
});

const memberOr404 = lookup(findMember, {
  code: 'resource_not_found',
  message: 'No such member in this workspace.',
  param: 'userId',
  pattern: idPatterns.user,
});

function roleOf(m: MemberRow): MemberView['role'] {
  // The owner holds the owner role by ownership, not by a membership's role id.
  if (m.is_owner) return { id: null, name: 'Owner', builtin: 'owner' };
  if (m.role_name === null) return null;
  return { id: m.role_id, name: m.role_name, builtin: m.role_builtin };
}

function viewMember(m: MemberRow, grants: GrantRow[]): MemberView {
  const mine = grants.filter((g) => g.user_id === m.user_id);
  return {
    object: 'member',
    userId: m.user_id,
    email: m.email,
    name: m.name ?? m.email,
    image: m.image,
    isOwner: m.is_owner,
    role: roleOf(m),
    implied: false,
    permissions: m.is_owner ? [...PERMISSIONS] : (m.role_permissions ?? []),
    addresses: mine
      .filter((g) => g.kind === 'address')
      .map((g) => ({ addressId: g.target_id, address: g.label, access: g.access })),
    domains: mine
      .filter((g) => g.kind === 'domain')
      .map((g) => ({ domainId: g.target_id, domain: g.label, access: g.access })),
    createdAt: m.created_at.toISOString(),
  };
}

/** Members with their grants, read in one query for the whole page. */
export async function viewMembers(
  db: Kysely<ReadModels>,
  workspaceId: string,
  rows: MemberRow[],
): Promise<MemberView[]> {
  const grants = await grantsOf(
    db,
    workspaceId,
    rows.map((r) => r.user_id),
  );
  return rows.map((r) => viewMember(r, grants));
}

export async function readMember(db: Kysely<ReadModels>, workspaceId: string, userId: string): Promise<MemberView> {
  const row = await memberOr404(db, workspaceId, userId);
  return (await viewMembers(db, workspaceId, [row]))[0]!;
}

export const viewInvitation = (i: InvitationRow): z.infer<typeof invitationView> => ({
  object: 'invitation',
  id: i.id,
  email: i.email,
  roleId: i.role_id,
  addressIds: i.address_ids,
  domainIds: i.domain_ids,
  access: i.access,
  invitedAt: i.invited_at.toISOString(),
  expiresAt: new Date(invitationExpiry(i.invited_at)).toISOString(),
});
