import type { FastifyInstance, FastifyReply } from 'fastify';
import { invitationLinks } from '../../commands/members/links.ts';
import { acceptInvitation } from '../../commands/members/handlers.ts';
import { invitationExpiry } from '../../domain/members/decide.ts';
import { DomainError } from '../../domain/shared/errors.ts';
import { findInvitationAnywhere } from '../../projections/members/queries.ts';
import { findWorkspace } from '../../projections/workspaces/queries.ts';
import type { ApiDeps } from '../deps.ts';
import { escapeHtml, page } from './html.ts';

const gone = (reply: FastifyReply) =>
  page(
    reply,
    404,
    'This invitation no longer works',
    '<p>It was accepted already, replaced by a newer one, or is older than 7 days. Ask whoever invited you for a new one.</p>',
  );

/**
 * The page an invitee accepts at, from the link mailed to them: no credential, the link is the
 * proof. Opening it changes nothing (mail scanners open links); accepting is a form posted back.
 */
export function registerInvitationPages(app: FastifyInstance, deps: ApiDeps): void {
  const open = async (token: string) => {
    const link = invitationLinks.read(deps.members.key, token);
    if (!link) return null;
    const invitation = await findInvitationAnywhere(deps.db, link.id);
    const live = invitation?.nonce === link.nonce && invitationExpiry(invitation.invited_at) > Date.now();
    if (!live) return null;
    const workspace = await findWorkspace(deps.db, invitation.workspace_id);
    return workspace ? { link, invitation, workspace } : null;
  };

  const config = { auth: false };
  app.register(async (scope) => {
    // The form posts no fields; its body is read and dropped.
    scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, _body, done) =>
      done(null, {}),
    );
    scope.get<{ Params: { token: string } }>('/invitations/:token', { config }, async (request, reply) => {
      const found = await open(request.params.token);
      if (!found) return gone(reply);
      return page(
        reply,
        200,
        `Join ${found.workspace.name}?`,
        `<p>You, <strong>${escapeHtml(found.invitation.email)}</strong>, are invited to the workspace <strong>${escapeHtml(found.workspace.name)}</strong>.</p>` +
          '<form method="post"><button type="submit">Accept the invitation</button></form>',
      );
    });

    scope.post<{ Params: { token: string } }>('/invitations/:token', { config }, async (request, reply) => {
      const found = await open(request.params.token);
      if (!found) return gone(reply);
      const { link, invitation, workspace } = found;
      try {
        await acceptInvitation(
          deps.commands,
          { workspaceId: invitation.workspace_id, email: invitation.email, invitationId: link.id, nonce: link.nonce },
          new Date().toISOString(),
        );
      } catch (error) {
        if (error instanceof DomainError) return gone(reply);
        throw error;
      }
      return page(
        reply,
        200,
        `Welcome to ${workspace.name}`,
        `<p>${escapeHtml(invitation.email)} is now a member of ${escapeHtml(workspace.name)}.</p>`,
      );
    });
  });
}
