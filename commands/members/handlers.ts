import {
  decideAcceptInvitation,
  decideChangeMemberRole,
  decideGrant,
  decideInviteMember,
  decideReassignRole,
  decideRemoveMember,
  decideRevoke,
  type Caller,
  type GrantTarget,
  type Owner,
  type InviteMember,
  type RoleFacts,
} from '../../domain/members/decide.ts';
import { membersStream, type Access } from '../../domain/members/events.ts';
import { membersAggregate } from '../../domain/members/state.ts';
import { openAccount } from '../accounts/handlers.ts';
import { execute, type Actor, type CommandContext } from '../execute.ts';
import { newId } from '../ids.ts';
import { invitationLinks } from './links.ts';

/** What the request names; the handler adds the ids, the caller and the time. */
export type InviteInput = Omit<InviteMember, 'invitationId' | 'nonce' | 'caller' | 'now'>;

/**
 * Records the invitation (or its refresh) and answers. Its link is mailed by a process following
 * the log (processes/members/invitation-mail.ts), retried until the mail server takes it.
 */
export async function inviteMember(
  ctx: CommandContext,
  actor: Actor,
  caller: Caller,
  input: InviteInput,
  now: string,
): Promise<{ invitationId: string }> {
  const nonce = invitationLinks.newNonce();
  const fresh = newId.invitation();
  const { events } = await execute(ctx, actor, membersStream(actor.workspaceId), membersAggregate, (s) =>
    decideInviteMember(s, { ...input, invitationId: fresh, nonce, caller, now }),
  );
  const invited = events[0];
  if (invited?.type !== 'MemberInvited') throw new Error('an invitation decides one MemberInvited');
  return { invitationId: invited.data.invitationId };
}

/**
 * The account first (made if the email is new), then the membership. Two acceptances of one link
 * race on the members stream: the second finds the invitation gone and is refused.
 */
export async function acceptInvitation(
  ctx: CommandContext,
  invitation: { workspaceId: string; invitationId: string; nonce: string; email: string },
  now: string,
): Promise<string> {
  const actor: Actor = { workspaceId: invitation.workspaceId, kind: 'system', id: null };
  const userId = await openAccount(ctx, actor, invitation.email, now);
  await execute(ctx, actor, membersStream(invitation.workspaceId), membersAggregate, (s) =>
    decideAcceptInvitation(s, { invitationId: invitation.invitationId, nonce: invitation.nonce, userId, now }),
  );
  return userId;
}

export async function changeMemberRole(
  ctx: CommandContext,
  actor: Actor,
  cmd: { userId: string; owner: Owner; role: RoleFacts | null; caller: Caller },
  now: string,
): Promise<void> {
  await execute(ctx, actor, membersStream(actor.workspaceId), membersAggregate, (s) =>
    decideChangeMemberRole(s, { ...cmd, now }),
  );
}

export async function removeMember(
  ctx: CommandContext,
  actor: Actor,
  cmd: { userId: string; owner: Owner },
  now: string,
): Promise<void> {
  await execute(ctx, actor, membersStream(actor.workspaceId), membersAggregate, (s) =>
    decideRemoveMember(s, { ...cmd, now }),
  );
}

/** Grants (`access` given) or revokes (`access` null) one address or domain. */
export async function setMemberGrant(
  ctx: CommandContext,
  actor: Actor,
  cmd: { userId: string; owner: Owner; target: GrantTarget; access: Access | null },
  now: string,
): Promise<void> {
  const { access, ...rest } = cmd;
  await execute(ctx, actor, membersStream(actor.workspaceId), membersAggregate, (s) =>
    access === null ? decideRevoke(s, { ...rest, now }) : decideGrant(s, { ...rest, access, now }),
  );
}

/** After a role's deletion: its members and pending invitations move to `toRoleId`. */
export async function reassignMembers(
  ctx: CommandContext,
  actor: Actor,
  fromRoleId: string,
  toRoleId: string,
  now: string,
): Promise<void> {
  await execute(ctx, actor, membersStream(actor.workspaceId), membersAggregate, (s) =>
    decideReassignRole(s, { fromRoleId, toRoleId, now }),
  );
}
