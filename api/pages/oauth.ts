import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { OAuthApp } from '../../commands/oauth/ports.ts';
import { allowChanges } from '../../commands/step-up/handlers.ts';
import { requestedScopes } from '../../domain/oauth/authority.ts';
import type { Allowlists } from '../../domain/shared/allowlists.ts';
import { PERMISSION_ENTRIES, type Permission } from '../../domain/shared/permissions.ts';
import { findLiveSession, type SessionRow, workspacesOf } from '../../projections/accounts/queries.ts';
import type { ApiDeps } from '../deps.ts';
import { cookieValue, crossSite, returnCookie, SESSION_COOKIE } from './accounts.ts';
import { escapeHtml, page } from './html.ts';

type Form = Record<string, string> | undefined;

/** The authorization request (RFC 6749 §4.1.1 with RFC 7636's PKCE), as query or form fields. */
const authorizeParams = z.object({
  response_type: z.string().max(64).optional(),
  client_id: z.string().max(64),
  redirect_uri: z.string().max(2000),
  scope: z.string().max(4000).optional(),
  state: z.string().max(500).optional(),
  code_challenge: z.string().max(128).optional(),
  code_challenge_method: z.string().max(16).optional(),
});
type AuthorizeParams = z.infer<typeof authorizeParams>;

const consentForm = authorizeParams.extend({
  decision: z.enum(['approve', 'deny']),
  workspace: z.string().max(64).optional(),
  addresses: z.string().max(32_000).optional(),
  domains: z.string().max(32_000).optional(),
});

/** RFC 7636 §4.2: 43 to 128 characters of base64url, the S256 digest of the verifier. */
const S256_CHALLENGE = /^[A-Za-z0-9_-]{43,128}$/;
const ADDRESS = /^[^\s@,]{1,64}@[a-z0-9.-]{1,253}$/;
const DOMAIN = /^[a-z0-9.-]{1,253}\.[a-z0-9-]{1,63}$/;
/** What one consent may narrow to, and what one app may register. */
const MAX_NARROWED = 100;
const MAX_REDIRECT_URIS = 10;

/** Called by apps, from anywhere: not forms of our pages. */
const APP_ENDPOINTS = new Set(['/oauth/token', '/oauth/revoke']);

const revokeForm = z.object({
  token: z.string().max(200),
  client_id: z.string().max(64),
  token_type_hint: z.string().max(64).optional(),
});
/** A form naming one of the person's approvals: disconnect, or allow changes. */
const disconnectForm = z.object({ grant: z.string().min(1).max(64) });

const registerForm = z.object({
  name: z.string().trim().min(1).max(100),
  redirect_uris: z.string().max(MAX_REDIRECT_URIS * 2001),
});

/**
 * Where an app sends people back: an absolute https address, or http on the person's own machine
 * (RFC 8252 §7.3, native apps), without a fragment (RFC 6749 §3.1.2).
 */
function redirectUriProblem(uri: string): string | null {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return `${uri} is not an absolute address.`;
  }
  if (url.hash !== '' || uri.includes('#')) return `${uri} has a fragment; a redirect address cannot.`;
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:' && ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname)) return null;
  return `${uri} must be https (http only to localhost).`;
}

/** The app's redirect address with the answer's fields added. */
function answerUrl(redirectUri: string, fields: Record<string, string | undefined>): string {
  const url = new URL(redirectUri);
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) url.searchParams.set(k, v);
  return url.toString();
}

const listOf = (text: string | undefined) =>
  (text ?? '')
    .toLowerCase()
    .split(/[\s,]+/)
    .filter((w) => w !== '');

/**
 * Connecting an app (docs/decisions/oauth.md): the authorization page, where a signed-in person
 * chooses the workspace, sees the scopes and may narrow the app to some addresses or domains; the
 * token endpoint; and the page where a person registers apps. The codes and tokens are made by
 * @node-oauth/oauth2-server over our PostgreSQL (infra/oauth/postgres.ts).
 */
export function registerOAuthPages(app: FastifyInstance, deps: ApiDeps): void {
  const oauth = deps.oauth;

  const sessionOf = async (request: FastifyRequest): Promise<SessionRow | undefined> => {
    const token = cookieValue(request.headers.cookie, SESSION_COOKIE);
    const sessionId = token ? deps.accounts.ports.codes.sessionIdOf(token) : null;
    return sessionId ? findLiveSession(deps.db, sessionId) : undefined;
  };
  const see = (reply: FastifyReply, location: string) => reply.code(303).header('location', location).send();
  const problem = (text: string) => `<p id="problem" role="alert">${escapeHtml(text)}</p>`;

  /**
   * The request checked in the order RFC 6749 §4.1.2.1 asks: an unknown app or a redirect address
   * it did not register is said on our page (never redirected to); anything else wrong goes back
   * to the app as `error`.
   */
  const checked = async (
    params: AuthorizeParams,
    reply: FastifyReply,
  ): Promise<{ app: OAuthApp; scopes: Permission[]; codeChallenge: string } | null> => {
    const found = await oauth.findApp(params.client_id);
    if (!found) {
      await page(reply, 400, 'Unknown app', problem('This app is not registered with us.'));
      return null;
    }
    if (!found.redirectUris.includes(params.redirect_uri)) {
      await page(
        reply,
        400,
        'Unknown redirect address',
        problem(`${found.name} did not register the address it asked to send you back to.`),
      );
      return null;
    }
    const back = async (error: string, description: string) => {
      await see(reply, answerUrl(params.redirect_uri, { error, error_description: description, state: params.state }));
      return null;
    };
    if (params.response_type !== 'code')
      return back('unsupported_response_type', 'Only the authorization code flow (response_type=code) is offered.');
    if (params.code_challenge_method !== 'S256' || !S256_CHALLENGE.test(params.code_challenge ?? ''))
      return back(
        'invalid_request',
        'PKCE is required: code_challenge (S256 of the verifier) and code_challenge_method=S256.',
      );
    const asked = requestedScopes(params.scope);
    if ('refused' in asked) return back('invalid_scope', asked.refused);
    return { app: found, scopes: asked.scopes, codeChallenge: params.code_challenge! };
  };

  const hidden = (params: AuthorizeParams) =>
    (
      [
        'response_type',
        'client_id',
        'redirect_uri',
        'scope',
        'state',
        'code_challenge',
        'code_challenge_method',
      ] as const
    )
      .filter((k) => params[k] !== undefined)
      .map((k) => `<input type="hidden" name="${k}" value="${escapeHtml(params[k]!)}">`)
      .join('');

  const consentPage = async (
    reply: FastifyReply,
    session: SessionRow,
    params: AuthorizeParams,
    app: OAuthApp,
    scopes: Permission[],
    status = 200,
    notice = '',
  ) => {
    const workspaces = await workspacesOf(deps.db, session.userId);
    if (workspaces.length === 0)
      return page(reply, 403, 'No workspace', problem('You are not a member of any workspace to connect an app to.'));
    const labels = new Map(PERMISSION_ENTRIES.map((e) => [e.permission, e.label]));
    const choices = workspaces
      .map(
        (w, i) =>
          `<label><input type="radio" name="workspace" value="${escapeHtml(w.workspaceId)}" required${
            (params as { workspace?: string }).workspace === w.workspaceId || (i === 0 && workspaces.length === 1)
              ? ' checked'
              : ''
          }> ${escapeHtml(w.name)}</label>`,
      )
      .join('');
    return page(
      reply,
      status,
      `Connect ${app.name}`,
      notice +
        `<p>Signed in as <strong>${escapeHtml(session.email)}</strong>. <strong>${escapeHtml(app.name)}</strong> asks to act for you.</p>` +
        '<form method="post" action="/oauth/authorize">' +
        hidden(params) +
        `<fieldset><legend>Workspace</legend>${choices}</fieldset>` +
        `<p>It may:</p><ul>${scopes.map((s) => `<li>${escapeHtml(labels.get(s) ?? s)} (<code>${s}</code>)</li>`).join('')}</ul>` +
        '<p>Never more than you may do yourself: if your role or your addresses change, the app follows.</p>' +
        '<label for="addresses">Only these addresses (optional, one per line)</label>' +
        '<textarea id="addresses" name="addresses" rows="3" cols="40"></textarea>' +
        '<label for="domains">Only these domains (optional, one per line)</label>' +
        '<textarea id="domains" name="domains" rows="3" cols="40"></textarea>' +
        '<p><button type="submit" name="decision" value="approve">Allow</button>' +
        '<button type="submit" name="decision" value="deny">Deny</button></p></form>',
      [new URL(params.redirect_uri).origin],
    );
  };

  /** The narrowing a person typed, checked against the workspace's addresses and domains. */
  const narrowing = async (
    workspaceId: string,
    form: z.infer<typeof consentForm>,
  ): Promise<Allowlists | { problem: string }> => {
    const addresses = listOf(form.addresses);
    const domains = listOf(form.domains);
    if (addresses.length === 0 && domains.length === 0) return { addressAllowlist: null, domainAllowlist: null };
    if (addresses.length > MAX_NARROWED || domains.length > MAX_NARROWED)
      return { problem: `Name at most ${MAX_NARROWED} addresses and ${MAX_NARROWED} domains.` };
    const badAddress = addresses.find((a) => !ADDRESS.test(a));
    if (badAddress) return { problem: `${badAddress} is not an email address.` };
    const badDomain = domains.find((d) => !DOMAIN.test(d));
    if (badDomain) return { problem: `${badDomain} is not a domain name.` };
    const [knownAddresses, knownDomains] = await Promise.all([
      addresses.length === 0
        ? []
        : deps.db
            .selectFrom('addresses')
            .select('address')
            .where('workspace_id', '=', workspaceId)
            .where('address', 'in', addresses)
            .execute(),
      domains.length === 0
        ? []
        : deps.db
            .selectFrom('domains')
            .select('domain')
            .where('workspace_id', '=', workspaceId)
            .where('domain', 'in', domains)
            .execute(),
    ]);
    const a = new Set(knownAddresses.map((r) => r.address));
    const d = new Set(knownDomains.map((r) => r.domain));
    const unknown = [...addresses.filter((x) => !a.has(x)), ...domains.filter((x) => !d.has(x))];
    if (unknown.length > 0) return { problem: `Not in this workspace: ${unknown.join(', ')}.` };
    return { addressAllowlist: addresses, domainAllowlist: domains };
  };

  const config = { auth: false };
  app.register(async (scope) => {
    scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) =>
      done(null, Object.fromEntries(new URLSearchParams(body as string))),
    );
    // The pages' forms post only from our own pages (as the account pages'); the token endpoint
    // is called by apps, from anywhere.
    scope.addHook('preHandler', async (request, reply) => {
      if (request.method === 'POST' && !APP_ENDPOINTS.has(request.routeOptions.url ?? '') && crossSite(request))
        return page(reply, 403, 'Refused', '<p>This form must be sent from our own page.</p>');
    });

    scope.get<{ Querystring: Form }>('/oauth/authorize', { config }, async (request, reply) => {
      const params = authorizeParams.safeParse(request.query ?? {});
      if (!params.success)
        return page(reply, 400, 'Incomplete request', problem('The app sent an incomplete request to connect.'));
      const ok = await checked(params.data, reply);
      if (!ok) return reply;
      const session = await sessionOf(request);
      if (!session) {
        // The sign-in comes back here once it succeeds.
        reply.header('set-cookie', returnCookie(request, deps.accounts.secureCookies, request.url));
        return see(reply, '/sign-in');
      }
      return consentPage(reply, session, params.data, ok.app, ok.scopes);
    });

    scope.post<{ Body: Form }>('/oauth/authorize', { config }, async (request, reply) => {
      const form = consentForm.safeParse(request.body ?? {});
      if (!form.success)
        return page(
          reply,
          400,
          'Incomplete request',
          problem('The form came back incomplete; start again from the app.'),
        );
      const ok = await checked(form.data, reply);
      if (!ok) return reply;
      const session = await sessionOf(request);
      if (!session) return see(reply, '/sign-in');
      const { redirect_uri: redirectUri, state } = form.data;
      if (form.data.decision === 'deny')
        return see(
          reply,
          answerUrl(redirectUri, { error: 'access_denied', error_description: 'The person declined.', state }),
        );
      const workspaces = await workspacesOf(deps.db, session.userId);
      const workspaceId = form.data.workspace;
      if (!workspaceId || !workspaces.some((w) => w.workspaceId === workspaceId))
        return consentPage(
          reply,
          session,
          form.data,
          ok.app,
          ok.scopes,
          400,
          problem('Choose one of your workspaces.'),
        );
      const lists = await narrowing(workspaceId, form.data);
      if ('problem' in lists)
        return consentPage(reply, session, form.data, ok.app, ok.scopes, 400, problem(lists.problem));
      const location = await oauth.approve({
        clientId: ok.app.clientId,
        userId: session.userId,
        workspaceId,
        scopes: ok.scopes,
        ...lists,
        redirectUri,
        state,
        codeChallenge: ok.codeChallenge,
        codeChallengeMethod: 'S256',
      });
      return see(reply, location);
    });

    scope.post<{ Body: Form }>('/oauth/token', { config }, async (request, reply) => {
      const body = Object.fromEntries(
        Object.entries((request.body ?? {}) as Record<string, unknown>).filter(
          (e): e is [string, string] => typeof e[1] === 'string',
        ),
      );
      // The library checks the content type itself: RFC 6749 §3.2 takes only forms.
      const headers = Object.fromEntries(
        Object.entries(request.headers).filter((e): e is [string, string] => typeof e[1] === 'string'),
      );
      const answer = await oauth.token(body, headers);
      return reply
        .code(answer.status)
        .headers({ ...answer.headers, 'cache-control': 'no-store', pragma: 'no-cache' })
        .send(answer.body);
    });

    scope.post<{ Body: Form }>('/oauth/revoke', { config }, async (request, reply) => {
      const form = revokeForm.safeParse(request.body ?? {});
      reply.header('cache-control', 'no-store');
      if (!form.success)
        return reply
          .code(400)
          .send({ error: 'invalid_request', error_description: 'Send `token` and `client_id` as a form.' });
      // RFC 7009 §2.2: the answer is the same whether the token was known or not.
      await oauth.revoke(form.data.token, form.data.client_id);
      return reply.code(200).send();
    });

    const connectedPage = async (reply: FastifyReply, session: SessionRow, status = 200) => {
      const connections = await oauth.connectionsOf(session.userId);
      const elevated = await deps.stepUp.store.elevationsOf(session.userId);
      // Elevation is the app's for the person (docs/decisions/step-up.md), so each of its approvals shows it.
      const changes = (c: (typeof connections)[number]) => {
        const until = elevated.get(c.clientId);
        return until
          ? `<p>Changes allowed until ${escapeHtml(until.slice(11, 16))} UTC.</p>`
          : '<form method="post" action="/account/connected-apps/allow-changes">' +
              `<input type="hidden" name="grant" value="${escapeHtml(c.grantId)}">` +
              // Named for its app, as the disconnect buttons are: a page of several apps has one each.
              `<button type="submit" aria-label="Allow changes for 60 minutes: ${escapeHtml(c.appName)}">` +
              'Allow changes for 60 minutes</button></form>';
      };
      const reach = (c: (typeof connections)[number]) =>
        c.addressAllowlist === null && c.domainAllowlist === null
          ? 'every address you reach'
          : [...(c.addressAllowlist ?? []), ...(c.domainAllowlist ?? [])].map((x) => escapeHtml(x)).join(', ') ||
            'no address';
      const rows = connections
        .map(
          (c) =>
            `<li><strong>${escapeHtml(c.appName)}</strong> in ${escapeHtml(c.workspaceName)}: ` +
            `${c.scopes.map((x) => `<code>${x}</code>`).join(' ')}; ${reach(c)}; ` +
            `until ${c.expiresAt ? escapeHtml(c.expiresAt.slice(0, 10)) : 'you disconnect it'}` +
            changes(c) +
            '<form method="post" action="/account/connected-apps/disconnect">' +
            `<input type="hidden" name="grant" value="${escapeHtml(c.grantId)}">` +
            `<button type="submit">Disconnect ${escapeHtml(c.appName)}</button></form></li>`,
        )
        .join('');
      return page(
        reply,
        status,
        'Connected apps',
        (connections.length === 0 ? '<p>No app is connected.</p>' : `<ul>${rows}</ul>`) +
          '<p><a href="/account">Back to your account</a></p>',
      );
    };

    scope.get('/account/connected-apps', { config }, async (request, reply) => {
      const session = await sessionOf(request);
      if (!session) return see(reply, '/sign-in');
      return connectedPage(reply, session);
    });

    scope.post<{ Body: Form }>('/account/connected-apps/disconnect', { config }, async (request, reply) => {
      const session = await sessionOf(request);
      if (!session) return see(reply, '/sign-in');
      const form = disconnectForm.safeParse(request.body ?? {});
      // Only the person's own approvals: another's id changes nothing and is answered as unknown.
      if (!form.success || !(await oauth.disconnect(session.userId, form.data.grant)))
        return connectedPage(reply, session, 404);
      return see(reply, '/account/connected-apps');
    });

    // Step-up elevation chosen by the person: their session is the proof, no code is asked.
    scope.post<{ Body: Form }>('/account/connected-apps/allow-changes', { config }, async (request, reply) => {
      const session = await sessionOf(request);
      if (!session) return see(reply, '/sign-in');
      const form = disconnectForm.safeParse(request.body ?? {});
      const grant = form.success
        ? (await oauth.connectionsOf(session.userId)).find((c) => c.grantId === form.data.grant)
        : undefined;
      if (!grant) return connectedPage(reply, session, 404);
      await allowChanges(deps.stepUp, { clientId: grant.clientId, userId: session.userId }, new Date().toISOString());
      return see(reply, '/account/connected-apps');
    });

    const appsPage = async (reply: FastifyReply, session: SessionRow, status = 200, notice = '') => {
      const apps = await oauth.appsOf(session.userId);
      const rows = apps
        .map(
          (a) =>
            `<li><strong>${escapeHtml(a.name)}</strong>: client id <code>${escapeHtml(a.clientId)}</code>; sends people back to ` +
            `${a.redirectUris.map((u) => `<code>${escapeHtml(u)}</code>`).join(', ')}</li>`,
        )
        .join('');
      return page(
        reply,
        status,
        'Your apps',
        notice +
          (apps.length === 0 ? '<p>You have registered no apps.</p>' : `<ul>${rows}</ul>`) +
          '<h2>Register an app</h2><form method="post" action="/account/apps">' +
          '<label for="name">Name people see when they connect it</label>' +
          '<input id="name" name="name" required maxlength="100">' +
          `<label for="redirect_uris">Redirect addresses (https, or http to localhost; one per line, at most ${MAX_REDIRECT_URIS})</label>` +
          '<textarea id="redirect_uris" name="redirect_uris" rows="3" cols="50" required></textarea>' +
          '<p><button type="submit">Register</button></p></form><p><a href="/account">Back to your account</a></p>',
      );
    };

    scope.get('/account/apps', { config }, async (request, reply) => {
      const session = await sessionOf(request);
      if (!session) return see(reply, '/sign-in');
      return appsPage(reply, session);
    });

    scope.post<{ Body: Form }>('/account/apps', { config }, async (request, reply) => {
      const session = await sessionOf(request);
      if (!session) return see(reply, '/sign-in');
      const form = registerForm.safeParse(request.body ?? {});
      if (!form.success)
        return appsPage(reply, session, 400, problem('Give the app a name of at most 100 characters.'));
      const uris = [...new Set(form.data.redirect_uris.split(/\s+/).filter((u) => u !== ''))];
      if (uris.length === 0 || uris.length > MAX_REDIRECT_URIS)
        return appsPage(reply, session, 400, problem(`Give one to ${MAX_REDIRECT_URIS} redirect addresses.`));
      const bad = uris.map((u) => (u.length > 2000 ? `${u.slice(0, 40)}… is too long.` : redirectUriProblem(u)));
      const first = bad.find((b) => b !== null);
      if (first) return appsPage(reply, session, 400, problem(first));
      const registered = await oauth.register(session.userId, form.data.name, uris);
      return appsPage(
        reply,
        session,
        201,
        `<p role="status">Registered <strong>${escapeHtml(registered.name)}</strong>: its client id is <code id="client-id">${registered.clientId}</code>.</p>`,
      );
    });
  });
}
