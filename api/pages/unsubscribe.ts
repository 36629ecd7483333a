import type { FastifyInstance, FastifyReply } from 'fastify';
import { addToAudience, removeFromAudience } from '../../commands/contacts/handlers.ts';
import { recipientActor, rejoin, unsubscribe } from '../../commands/unsubscribes/handlers.ts';
import type { UnsubscribeLink } from '../../commands/unsubscribes/links.ts';
import type { UnsubscribeSource } from '../../domain/unsubscribes/events.ts';
import { allAudiences, findAudience, findContactByEmail } from '../../projections/contacts/queries.ts';
import { unsubscribesOf } from '../../projections/unsubscribes/queries.ts';
import type { ApiDeps } from '../deps.ts';
import { escapeHtml, page } from './html.ts';

const notFound = (reply: FastifyReply) =>
  page(reply, 404, 'This link does not work', '<p>Check that the whole link from the email was opened.</p>');

/** A one-click POST (RFC 8058 3.2) as a form or multipart body: exactly `List-Unsubscribe=One-Click`. */
function isOneClick(body: unknown): boolean {
  if (typeof body === 'string') return /name="List-Unsubscribe"\r?\n\r?\nOne-Click\r?\n/.test(body);
  return (body as Record<string, string> | undefined)?.['List-Unsubscribe'] === 'One-Click';
}

/**
 * The unsubscribe link of broadcast-lane mail (`List-Unsubscribe`), no credential: a POST with
 * `List-Unsubscribe=One-Click` (the mail client's button) unsubscribes at once and answers 200
 * without a page; opening the link (a GET, which mail scanners also do) changes nothing and shows
 * the preferences page, whose forms post back to the same address.
 */
export function registerUnsubscribePages(app: FastifyInstance, deps: ApiDeps): void {
  const links = deps.sending.unsubscribeLinks;

  /**
   * Leaving an audience also takes the contact out of it, and rejoining puts it back, so the
   * audience and its growth figures agree with the page. The default audience holds every contact
   * and stays; an address that is no contact has no membership.
   */
  const membership = async (link: UnsubscribeLink, audienceId: string | null, action: 'leave' | 'rejoin') => {
    if (audienceId === null) return;
    const [contact, audience] = await Promise.all([
      findContactByEmail(deps.db, link.partition, link.email),
      findAudience(deps.db, link.partition, audienceId),
    ]);
    if (!contact || !audience || audience.builtin !== null) return;
    await (action === 'leave' ? removeFromAudience : addToAudience)(
      deps.commands,
      recipientActor(link.partition),
      { email: link.email, audienceId },
      new Date().toISOString(),
    );
  };

  const record = async (link: UnsubscribeLink, audienceId: string | null, source: UnsubscribeSource) => {
    const contact = await findContactByEmail(deps.db, link.partition, link.email);
    await unsubscribe(
      deps.commands,
      recipientActor(link.partition),
      { email: link.email, contactId: contact?.id ?? null, audienceId, source, emailId: link.emailId },
      new Date().toISOString(),
    );
    await membership(link, audienceId, 'leave');
  };

  const preferences = async (reply: FastifyReply, link: UnsubscribeLink, notice: string, status = 200) => {
    const [audiences, left] = await Promise.all([
      allAudiences(deps.db, link.partition),
      unsubscribesOf(deps.db, link.partition, link.email),
    ]);
    const leftScopes = new Set(left.map((u) => u.audience_id ?? '*'));
    const form = (audience: string, action: 'leave' | 'rejoin', label: string) =>
      `<form method="post"><input type="hidden" name="audience" value="${escapeHtml(audience)}">` +
      `<button type="submit" name="action" value="${action}">${escapeHtml(label)}</button></form>`;
    const listed = audiences.filter((a) => a.show_on_preferences);
    const everything = leftScopes.has('*')
      ? `<p>You are unsubscribed from all of this sender’s mailings.</p>${form('all', 'rejoin', 'Subscribe again')}`
      : `<p>You receive this sender’s mailings.</p>${form('all', 'leave', 'Unsubscribe from everything')}`;
    const lists =
      listed.length === 0
        ? ''
        : `<h2>Mailing lists</h2><ul>${listed
            .map((a) => {
              const out = leftScopes.has(a.id);
              return `<li><p>${escapeHtml(a.name)}: ${out ? 'unsubscribed' : 'subscribed'}</p>${form(a.id, out ? 'rejoin' : 'leave', `${out ? 'Rejoin' : 'Leave'} ${a.name}`)}</li>`;
            })
            .join('')}</ul>`;
    return page(
      reply,
      status,
      'Email preferences',
      `${notice ? `<p role="status">${escapeHtml(notice)}</p>` : ''}<p>For <strong>${escapeHtml(link.email)}</strong>.</p>${everything}${lists}`,
    );
  };

  app.register(async (scope) => {
    scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) =>
      done(null, Object.fromEntries(new URLSearchParams(body as string))),
    );
    scope.addContentTypeParser('multipart/form-data', { parseAs: 'string' }, (_request, body, done) =>
      done(null, body),
    );
    const config = { auth: false };

    scope.get<{ Params: { token: string } }>('/unsubscribe/:token', { config }, async (request, reply) => {
      const link = await links.read(request.params.token);
      if (!link) return notFound(reply);
      return preferences(reply, link, '');
    });

    scope.post<{ Params: { token: string }; Body: unknown }>(
      '/unsubscribe/:token',
      { config },
      async (request, reply) => {
        const link = await links.read(request.params.token);
        if (!link) return notFound(reply);
        if (isOneClick(request.body)) {
          await record(link, link.audienceId, 'one-click');
          return reply.code(200).header('cache-control', 'no-store').send();
        }
        const form = (typeof request.body === 'object' && request.body ? request.body : {}) as Record<string, string>;
        const { action, audience } = form;
        if ((action !== 'leave' && action !== 'rejoin') || !audience) return preferences(reply, link, '', 400);
        let audienceId: string | null = null;
        if (audience !== 'all') {
          const listed = (await allAudiences(deps.db, link.partition)).find(
            (a) => a.id === audience && a.show_on_preferences,
          );
          if (!listed) return notFound(reply);
          audienceId = listed.id;
        }
        if (action === 'leave') await record(link, audienceId, 'preferences');
        else {
          await rejoin(
            deps.commands,
            recipientActor(link.partition),
            { email: link.email, audienceId },
            new Date().toISOString(),
          );
          await membership(link, audienceId, 'rejoin');
        }
        return preferences(reply, link, action === 'leave' ? 'You are unsubscribed.' : 'You are subscribed again.');
      },
    );
  });
}
