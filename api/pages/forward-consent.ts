import type { FastifyInstance, FastifyReply } from 'fastify';
import { answerForward } from '../../commands/addresses/handlers.ts';
import { consentLinks } from '../../commands/addresses/consent.ts';
import { CONSENT_LINK_TTL_MS } from '../../domain/addresses/decide.ts';
import { DomainError } from '../../domain/shared/errors.ts';
import { findForwardAnywhere } from '../../projections/addresses/queries.ts';
import type { ApiDeps } from '../deps.ts';
import { escapeHtml, page } from './html.ts';

const gone = (reply: FastifyReply) =>
  page(
    reply,
    404,
    'This link no longer works',
    '<p>It was answered already, replaced by a newer one, or is older than 7 days. Ask the sender for a new one.</p>',
  );

/**
 * The page a forward's destination answers at, from the link mailed to it: plain server-rendered
 * HTML, no credential. Opening the link changes nothing (mail scanners open links); the answer is
 * a form posted back to the same address.
 */
export function registerForwardConsentPages(app: FastifyInstance, deps: ApiDeps): void {
  const open = async (token: string) => {
    const link = consentLinks.read(deps.forwardConsent.key, token);
    if (!link) return null;
    const forward = await findForwardAnywhere(deps.db, link.id);
    const live =
      forward?.status === 'pending' &&
      forward.nonce === link.nonce &&
      forward.consent_requested_at !== null &&
      Date.now() - forward.consent_requested_at.getTime() <= CONSENT_LINK_TTL_MS;
    return live ? { link, forward } : null;
  };

  app.register(async (scope) => {
    scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) =>
      done(null, Object.fromEntries(new URLSearchParams(body as string))),
    );
    const config = { auth: false };

    scope.get<{ Params: { token: string } }>('/forward-consent/:token', { config }, async (request, reply) => {
      const found = await open(request.params.token);
      if (!found) return gone(reply);
      const { forward } = found;
      return page(
        reply,
        200,
        'Forward mail to you?',
        `<p><strong>${escapeHtml(forward.address)}</strong> asks to forward the mail it receives to <strong>${escapeHtml(forward.destination)}</strong>.</p>` +
          '<p>Nothing is forwarded unless you allow it. You can ask the sender to stop at any time.</p>' +
          `<form method="post"><button type="submit" name="answer" value="allow">Allow forwarding</button>` +
          `<button type="submit" name="answer" value="decline">Decline</button></form>`,
      );
    });

    scope.post<{ Params: { token: string }; Body: Record<string, string> | undefined }>(
      '/forward-consent/:token',
      { config },
      async (request, reply) => {
        const answer = request.body?.answer;
        if (answer !== 'allow' && answer !== 'decline')
          return page(reply, 400, 'Choose an answer', '<p>Go back to the link and press Allow or Decline.</p>');
        const found = await open(request.params.token);
        if (!found) return gone(reply);
        const { link, forward } = found;
        try {
          await answerForward(
            deps.commands,
            {
              workspaceId: forward.workspace_id,
              addressId: forward.address_id,
              forwardId: link.id,
              nonce: link.nonce,
              answer: answer === 'allow' ? 'confirmed' : 'declined',
            },
            new Date().toISOString(),
          );
        } catch (error) {
          if (error instanceof DomainError) return gone(reply);
          throw error;
        }
        return answer === 'allow'
          ? page(
              reply,
              200,
              'Forwarding allowed',
              `<p>Mail to ${escapeHtml(forward.address)} is now forwarded to ${escapeHtml(forward.destination)}.</p>`,
            )
          : page(
              reply,
              200,
              'Forwarding declined',
              `<p>Nothing from ${escapeHtml(forward.address)} will be forwarded to ${escapeHtml(forward.destination)}.</p>`,
            );
      },
    );
  });
}
