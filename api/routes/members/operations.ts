import type { Kysely } from 'kysely';
import { z } from 'zod';
import { changeMemberRole, inviteMember, removeMember, setMemberGrant } from '../../../commands/members/handlers.ts';
import type { Owner, RoleFacts } from '../../../domain/members/decide.ts';
import { ACCESS } from '../../../domain/members/events.ts';
import { idPatterns } from '../../../domain/shared/ids.ts';
import { isPermission } from '../../../domain/shared/permissions.ts';
import { knownAddressIds } from '../../../projections/addresses/queries.ts';
import { knownDomainIds } from '../../../projections/domains/queries.ts';
import {
  findInvitation,
  listMembers,
  memberCursorOf,
  type MemberCursor,
} from '../../../projections/members/queries.ts';
import { findRole, type RoleRow } from '../../../projections/roles/queries.ts';
import type { ReadModels } from '../../../projections/tables.ts';
import { findWorkspace } from '../../../projections/workspaces/queries.ts';
import { actorOf, type Credential } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { ApiError } from '../../errors/api-error.ts';
import { cursorParam, limitParam, pageSchema } from '../../paging.ts';
import { operation, type Operation } from '../../route.ts';
import { roleOr404 } from '../roles/views.ts';
import { invitationView, memberView, readMember, viewInvitation, viewMembers } from './views.ts';

type Db = Kysely<ReadModels>;

const userParams = z.object({ userId: z.string() });
const access = z.enum(ACCESS);
const roleId = z.string().describe('A role of the workspace (not the owner role).');

const MISSING = {
  address: { code: 'address_not_found', message: 'No such address in this workspace.' },
  domain: { code: 'resource_not_found', message: 'No such domain in this workspace.' },
} as const;

/** Every id names an address (a domain) of the workspace, in one query; else the first missing is refused at `paramOf(i)`. */
async function requireTargets(
  db: Db,
  workspaceId: string,
  kind: 'address' | 'domain',
  ids: string[],
  paramOf: (i: number) => string,
): Promise<void> {
  // A malformed id names nothing; domain ids are uuid columns, so it must not reach the query.
  const wellFormed = ids.filter((id) => idPatterns[kind].test(id));
  const known = await (kind === 'address' ? knownAddressIds : knownDomainIds)(db, workspaceId, wellFormed);
  const missing = ids.findIndex((id) => !known.has(id));
  if (missing >= 0) throw new ApiError(MISSING[kind].code, MISSING[kind].message, paramOf(missing));
}

const factsOf = (row: RoleRow): RoleFacts => ({
  roleId: row.id,
  builtin: row.builtin,
  permissions: row.permissions.filter(isPermission),
});

async function ownerOf(db: Db, workspaceId: string): Promise<Owner> {
  const ws = await findWorkspace(db, workspaceId);
  if (!ws) throw new Error(`workspace ${workspaceId} has no read model row`);
  return { userId: ws.owner_user_id, email: ws.owner_email };
}

const context = (credential: Credential, requestId: string) => ({
  actor: actorOf(credential, requestId),
  caller: { scopes: credential.scopes },
  now: new Date().toISOString(),
});

/** Grant and revoke of one address or one domain: four routes of one shape. */
function grantOperations(deps: ApiDeps, kind: 'address' | 'domain'): Operation[] {
  const plural = kind === 'address' ? 'addresses' : 'domains';
  const idName = kind === 'address' ? 'addressId' : 'domainId';
  const Noun = kind === 'address' ? 'Address' : 'Domain';
  const params = z.object({ userId: z.string(), targetId: z.string() });
  const errors = [
    'resource_not_found',
    'member_is_owner',
    ...(kind === 'address' ? (['address_not_found'] as const) : []),
  ] as const;
  const run = async (
    credential: Credential,
    requestId: string,
    p: z.infer<typeof params>,
    grant: 'member' | 'viewer' | null,
  ) => {
    const workspaceId = credential.workspaceId;
    const { actor, now } = context(credential, requestId);
    const owner = await ownerOf(deps.db, workspaceId);
    // Revoking needs no live target: a grant can outlive the address or domain it names.
    if (grant !== null) {
      await requireTargets(deps.db, workspaceId, kind, [p.targetId], () => idName);
    }
    const target = kind === 'address' ? { kind, addressId: p.targetId } : { kind, domainId: p.targetId };
    await setMemberGrant(deps.commands, actor, { userId: p.userId, owner, target, access: grant }, now);
    return readMember(deps.db, workspaceId, p.userId);
  };
  return [
    operation({
      method: 'PUT',
      url: `/members/:userId/${plural}/:targetId`,
      operationId: `grantMember${Noun}`,
      errors: [...errors],
      stepUp: true,
      summary: `Grant a member one ${kind} (grant${Noun})`,
      description: `Scope: \`members:write\`. Sets the member's direct grant of the ${kind} to \`access\` (added or changed). The owner is refused (422 \`member_is_owner\`).`,
      scope: 'members:write',
      params,
      body: z.strictObject({ access }),
      response: memberView,
      handler: ({ credential, params: p, body, request }) => run(credential, request.id, p, body.access),
    }),
    operation({
      method: 'DELETE',
      url: `/members/:userId/${plural}/:targetId`,
      operationId: `revokeMember${Noun}`,
      errors: ['resource_not_found', 'member_is_owner'],
      stepUp: true,
      summary: `Revoke a member's grant of one ${kind} (revoke${Noun})`,
      description: `Scope: \`members:write\`. Revoking a grant the member does not hold changes nothing. The owner is refused (422 \`member_is_owner\`).`,
      scope: 'members:write',
      params,
      response: memberView,
      handler: ({ credential, params: p, request }) => run(credential, request.id, p, null),
    }),
  ];
}

export const memberOperations = (deps: ApiDeps): Operation[] => [
  operation({
    method: 'GET',
    url: '/members',
    operationId: 'listMembers',
    summary: 'List members',
    description: 'Scope: `members:read`. The owner first, then by email.',
    scope: 'members:read',
    query: z.strictObject({ limit: limitParam(), cursor: cursorParam }),
    response: pageSchema(memberView),
    handler: async ({ credential, query }) => {
      const workspaceId = credential.workspaceId;
      const page = await deps.cursors.list(workspaceId, query, {
        name: 'members',
        rows: (after: MemberCursor | null, limit) => listMembers(deps.db, workspaceId, limit, after),
        key: memberCursorOf,
        view: (row) => row,
      });
      return { ...page, data: await viewMembers(deps.db, workspaceId, page.data) };
    },
  }),

  operation({
    method: 'GET',
    url: '/members/:userId',
    operationId: 'getMember',
    errors: ['resource_not_found'],
    summary: 'Read a member',
    scope: 'members:read',
    params: userParams,
    response: memberView,
    handler: ({ credential, params }) => readMember(deps.db, credential.workspaceId, params.userId),
  }),

  operation({
    method: 'POST',
    url: '/members',
    operationId: 'inviteMember',
    errors: [
      'member_is_owner',
      'invitation_too_soon',
      'workspace_limit_reached',
      'role_not_found',
      'address_not_found',
      'resource_not_found',
      'insufficient_authority',
    ],
    stepUp: true,
    summary: 'Invite a member (add)',
    description:
      'Scope: `members:write`. Mails an invitation; nothing is granted until it is accepted, then exactly the role and the ' +
      'addresses and domains named, each with `access`. The same email again within ten minutes is 409 `invitation_too_soon`; ' +
      'later it refreshes the invitation (a new link; the old one stops working). Somebody already in the workspace, or the ' +
      'owner, is 422 `member_is_owner`. At most 100 pending invitations. Answers the invitation.',
    scope: 'members:write',
    body: z.strictObject({
      email: z.email().max(320).describe('The invitee’s address.'),
      roleId,
      addressIds: z.array(z.string()).max(1000).default([]),
      domainIds: z.array(z.string()).max(100).default([]),
      access: access.default('member').describe('Applied to every address and domain named; never widens the role.'),
    }),
    status: 201,
    response: invitationView,
    handler: async ({ credential, body, request }) => {
      const workspaceId = credential.workspaceId;
      const { actor, caller, now } = context(credential, request.id);
      const role = factsOf(await roleOr404(deps.db, workspaceId, body.roleId));
      await requireTargets(deps.db, workspaceId, 'address', body.addressIds, (i) => `addressIds.${i}`);
      await requireTargets(deps.db, workspaceId, 'domain', body.domainIds, (i) => `domainIds.${i}`);
      const owner = await ownerOf(deps.db, workspaceId);
      const { invitationId } = await inviteMember(deps.commands, actor, caller, { ...body, role, owner }, now);
      const row = await findInvitation(deps.db, workspaceId, invitationId);
      if (!row) throw new Error(`invitation ${invitationId} is not in the read model after its write`);
      return viewInvitation(row);
    },
  }),

  operation({
    method: 'PATCH',
    url: '/members/:userId',
    operationId: 'updateMember',
    errors: ['resource_not_found', 'member_is_owner', 'role_not_found', 'insufficient_authority'],
    stepUp: true,
    summary: 'Change a member’s role (update)',
    description: 'Scope: `members:write`. The owner is refused (422 `member_is_owner`).',
    scope: 'members:write',
    params: userParams,
    body: z.strictObject({ roleId }),
    response: memberView,
    handler: async ({ credential, params, body, request }) => {
      const workspaceId = credential.workspaceId;
      const { actor, caller, now } = context(credential, request.id);
      const owner = await ownerOf(deps.db, workspaceId);
      // A missing role is the decider's to refuse, after the owner and strangers it answers first.
      const row = await findRole(deps.db, workspaceId, body.roleId);
      const role = row ? factsOf(row) : null;
      await changeMemberRole(deps.commands, actor, { userId: params.userId, owner, role, caller }, now);
      return readMember(deps.db, workspaceId, params.userId);
    },
  }),

  operation({
    method: 'DELETE',
    url: '/members/:userId',
    operationId: 'removeMember',
    errors: ['resource_not_found', 'member_is_owner'],
    stepUp: true,
    summary: 'Remove a member',
    description:
      'Scope: `members:write`. The membership and its grants end. The owner is refused (422 `member_is_owner`).',
    scope: 'members:write',
    params: userParams,
    response: z.object({ object: z.literal('member'), userId: z.string(), deleted: z.literal(true) }),
    handler: async ({ credential, params, request }) => {
      const { actor, now } = context(credential, request.id);
      const owner = await ownerOf(deps.db, credential.workspaceId);
      await removeMember(deps.commands, actor, { userId: params.userId, owner }, now);
      return { object: 'member' as const, userId: params.userId, deleted: true as const };
    },
  }),

  ...grantOperations(deps, 'address'),
  ...grantOperations(deps, 'domain'),
];
