import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import {
  type Answered,
  answerSecondFactor,
  answerSignInCode,
  askSignInCode,
  signOut,
  signOutEverywhere,
} from '../../commands/accounts/sign-in.ts';
import { confirmTwoFactor, disableTwoFactor, startTwoFactorSetup } from '../../commands/accounts/two-factor.ts';
import { SIGN_IN_CODE_TTL_MS, SIGN_IN_TRIES } from '../../domain/accounts/sign-in.ts';
import { DomainError } from '../../domain/shared/errors.ts';
import {
  findLiveSession,
  liveSessionsOf,
  type SessionRow,
  twoFactorOf,
  workspacesOf,
} from '../../projections/accounts/queries.ts';
import type { ApiDeps } from '../deps.ts';
import { escapeHtml, page } from './html.ts';

/** The session cookie's name (docs/decisions/accounts.md). */
export const SESSION_COOKIE = 'wms_session';

/**
 * Where a sign-in goes back to, when a page that needs a session sent the person to sign in
 * (docs/decisions/oauth.md: the consent page). Only our authorization page is taken, so the
 * cookie can never send anyone elsewhere.
 */
export const RETURN_COOKIE = 'wms_return';
const RETURNABLE = '/oauth/authorize?';

export function returnPath(request: FastifyRequest): string | null {
  const raw = cookieValue(request.headers.cookie, RETURN_COOKIE);
  if (!raw) return null;
  try {
    const path = decodeURIComponent(raw);
    return path.startsWith(RETURNABLE) ? path : null;
  } catch {
    return null;
  }
}

/** The return cookie: `path` for ten minutes, or cleared. */
export function returnCookie(request: FastifyRequest, secure: boolean, path: string | null): string {
  return (
    `${RETURN_COOKIE}=${path === null ? '' : encodeURIComponent(path)}; Path=/; Max-Age=${path === null ? 0 : 600}; HttpOnly; SameSite=Lax` +
    (secure || request.protocol === 'https' ? '; Secure' : '')
  );
}

const emailForm = z.object({ email: z.string().trim().toLowerCase().email().max(320) });
const codeForm = z.object({ challenge: z.string().min(1).max(64), code: z.string().max(64) });
const factorForm = z.object({ code: z.string().max(64) });
const endForm = z.object({ session: z.string().min(1).max(64) });

type Form = Record<string, string> | undefined;

const MINUTES = SIGN_IN_CODE_TTL_MS / 60_000;

const emailFields = (value = '', error?: string) =>
  '<form method="post" action="/sign-in">' +
  '<label for="email">Email address</label>' +
  `<input id="email" name="email" type="email" autocomplete="email" required maxlength="320" value="${escapeHtml(value)}"` +
  `${error ? ' aria-invalid="true" aria-describedby="problem"' : ''}>` +
  '<p><button type="submit">Email me a code</button></p></form>';

const problem = (text: string) => `<p id="problem" role="alert">${escapeHtml(text)}</p>`;

const codeFields = (action: string, challenge: string, label: string, hint: string, error?: string) =>
  `<form method="post" action="${action}">` +
  `<input type="hidden" name="challenge" value="${escapeHtml(challenge)}">` +
  `<label for="code">${escapeHtml(label)}</label>` +
  `<input id="code" name="code" type="text" autocomplete="one-time-code" required maxlength="64" aria-describedby="hint${error ? ' problem' : ''}"` +
  `${action === '/sign-in/code' ? ' inputmode="numeric" pattern="[0-9 ]*"' : ''}${error ? ' aria-invalid="true"' : ''}>` +
  `<p id="hint">${escapeHtml(hint)}</p>` +
  '<p><button type="submit">Sign in</button></p></form>';

const STEPS = {
  email_code: {
    action: '/sign-in/code',
    label: 'Six-digit code',
    hint: `The code in the mail we sent. It works for ${MINUTES} minutes.`,
  },
  second_factor: {
    action: '/sign-in/second-factor',
    label: 'Authenticator or backup code',
    hint: 'The six digits your authenticator app shows, or one of your backup codes.',
  },
} as const;

const askAgain = '<p><a href="/sign-in">Ask for a new code</a></p>';

/**
 * The service's own pages for people: sign-in by a mailed code (then an authenticator or backup
 * code when two-factor is on) and the account page. Plain server-rendered HTML, no script. Every
 * email is answered alike, account or not; the session is a signed cookie naming a session the
 * account's stream holds (docs/decisions/accounts.md).
 */
export function registerAccountPages(app: FastifyInstance, deps: ApiDeps): void {
  const { ports, secureCookies } = deps.accounts;
  const now = () => new Date().toISOString();

  const cookie = (request: FastifyRequest, value: string, maxAgeSeconds: number) =>
    `${SESSION_COOKIE}=${value}; Path=/; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Lax` +
    (secureCookies || request.protocol === 'https' ? '; Secure' : '');

  const sessionOf = async (request: FastifyRequest): Promise<SessionRow | undefined> => {
    const token = cookieValue(request.headers.cookie, SESSION_COOKIE);
    const sessionId = token ? ports.codes.sessionIdOf(token) : null;
    return sessionId ? findLiveSession(deps.db, sessionId) : undefined;
  };

  const see = (reply: FastifyReply, location: string) => reply.code(303).header('location', location).send();

  /** What an answer at either step of a sign-in shows. */
  const answered = (
    request: FastifyRequest,
    reply: FastifyReply,
    challenge: string,
    result: Answered,
    step: keyof typeof STEPS,
  ) => {
    switch (result.outcome) {
      case 'signed_in': {
        const maxAge = Math.floor((Date.parse(result.expiresAt) - Date.now()) / 1000);
        const back = returnPath(request);
        if (back === null) {
          reply.header('set-cookie', cookie(request, result.token, maxAge));
          return see(reply, '/account');
        }
        reply.header('set-cookie', [cookie(request, result.token, maxAge), returnCookie(request, secureCookies, null)]);
        return see(reply, back);
      }
      case 'second_factor': {
        const s = STEPS.second_factor;
        return page(
          reply,
          200,
          'Two-factor sign-in',
          `<p>Your account has two-factor sign-in on.</p>${codeFields(s.action, challenge, s.label, s.hint)}`,
        );
      }
      case 'wrong': {
        const s = STEPS[step];
        if (result.triesLeft === 0)
          return page(
            reply,
            400,
            'Too many wrong codes',
            problem('That code is not right, and it was the last try: this sign-in is locked.') + askAgain,
          );
        const error = `That code is not right. ${result.triesLeft} ${result.triesLeft === 1 ? 'try' : 'tries'} left.`;
        return page(reply, 400, 'Wrong code', problem(error) + codeFields(s.action, challenge, s.label, s.hint, error));
      }
      case 'locked':
        return page(
          reply,
          400,
          'Too many wrong codes',
          problem(`This sign-in is locked after ${SIGN_IN_TRIES} wrong codes.`) + askAgain,
        );
      case 'expired':
        return page(
          reply,
          400,
          'This code no longer works',
          problem(`A code works for ${MINUTES} minutes, once.`) + askAgain,
        );
    }
  };

  const config = { auth: false };
  app.register(async (scope) => {
    scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) =>
      done(null, Object.fromEntries(new URLSearchParams(body as string))),
    );
    // Forms post only from our own pages: the cookie's SameSite already keeps other sites' posts
    // without a session, and a post a browser marks as from another site is refused outright.
    scope.addHook('preHandler', async (request, reply) => {
      if (request.method === 'POST' && crossSite(request))
        return page(reply, 403, 'Refused', '<p>This form must be sent from our own page.</p>');
    });

    scope.get('/sign-in', { config }, async (request, reply) => {
      if (await sessionOf(request)) return see(reply, '/account');
      return page(reply, 200, 'Sign in', `<p>We will email you a six-digit code.</p>${emailFields()}`);
    });

    scope.post<{ Body: Form }>('/sign-in', { config }, async (request, reply) => {
      const form = emailForm.safeParse(request.body ?? {});
      if (!form.success) {
        const error = 'Enter an email address, like name@example.com.';
        return page(reply, 400, 'Sign in', problem(error) + emailFields(request.body?.email ?? '', error));
      }
      const { email } = form.data;
      const asked = await askSignInCode(ports, email, now());
      if ('retryAfterSeconds' in asked) {
        reply.header('retry-after', String(asked.retryAfterSeconds));
        const minutes = Math.ceil(asked.retryAfterSeconds / 60);
        return page(
          reply,
          429,
          'Too many codes asked for',
          problem(
            `Codes for this address were asked for too often. Try again in ${minutes} ${minutes === 1 ? 'minute' : 'minutes'}.`,
          ),
        );
      }
      const s = STEPS.email_code;
      return page(
        reply,
        200,
        'Check your mail',
        `<p>If <strong>${escapeHtml(email)}</strong> has an account with us, a six-digit code is on its way to it.</p>` +
          codeFields(s.action, asked.challengeId, s.label, s.hint) +
          '<p>No mail after a few minutes? Look in the spam folder, or <a href="/sign-in">ask for a new code</a>.</p>',
      );
    });

    for (const [step, answer] of [
      ['email_code', answerSignInCode],
      ['second_factor', answerSecondFactor],
    ] as const) {
      scope.post<{ Body: Form }>(STEPS[step].action, { config }, async (request, reply) => {
        const form = codeForm.safeParse(request.body ?? {});
        if (!form.success)
          return page(
            reply,
            400,
            'This code no longer works',
            problem('Nothing was waiting for this code.') + askAgain,
          );
        const { challenge, code } = form.data;
        const result = await answer(deps.commands, ports, challenge, code, now());
        return answered(request, reply, challenge, result, step);
      });
    }

    scope.post('/sign-out', { config }, async (request, reply) => {
      const session = await sessionOf(request);
      if (session) await signOut(deps.commands, session, now());
      reply.header('set-cookie', cookie(request, '', 0));
      return see(reply, '/sign-in');
    });

    scope.post('/sign-out/everywhere', { config }, async (request, reply) => {
      const session = await sessionOf(request);
      if (session) await signOutEverywhere(deps.commands, session, now());
      reply.header('set-cookie', cookie(request, '', 0));
      return see(reply, '/sign-in');
    });

    scope.post<{ Body: Form }>('/account/sessions/end', { config }, async (request, reply) => {
      const session = await sessionOf(request);
      if (!session) return see(reply, '/sign-in');
      const form = endForm.safeParse(request.body ?? {});
      // The account's stream ends only its own sessions: another person's id decides nothing.
      if (form.success) await signOut(deps.commands, { ...session, sessionId: form.data.session }, now());
      return see(reply, '/account');
    });

    scope.get('/account', { config }, async (request, reply) => {
      const session = await sessionOf(request);
      if (!session) return see(reply, '/sign-in');
      return accountPage(reply, session, 200);
    });

    const accountPage = async (reply: FastifyReply, session: SessionRow, status: number, notice = '') => {
      const [workspaces, twoFactor, sessions] = await Promise.all([
        workspacesOf(deps.db, session.userId),
        twoFactorOf(deps.db, session.userId),
        liveSessionsOf(deps.db, session.userId),
      ]);
      // Other sessions are named by when they began; ending one posts its id, which opens nothing alone.
      const others = sessions
        .filter((s) => s.sessionId !== session.sessionId)
        .map(
          (s) =>
            `<li>Signed in ${escapeHtml(s.signedInAt.toISOString().slice(0, 16).replace('T', ' '))} UTC ` +
            `<form method="post" action="/account/sessions/end"><input type="hidden" name="session" value="${escapeHtml(s.sessionId)}">` +
            `<button type="submit">End this session</button></form></li>`,
        );
      const list =
        workspaces.length === 0
          ? '<p>You are in no workspace.</p>'
          : `<ul>${workspaces.map((w) => `<li>${escapeHtml(w.name)} (${w.isOwner ? 'owner' : 'member'})</li>`).join('')}</ul>`;
      const security = twoFactor
        ? `<p>Two-factor sign-in is on. ${twoFactor.backupCodesLeft} of your backup codes are unused.</p>` +
          '<form method="post" action="/account/two-factor/off">' +
          '<label for="off-code">Authenticator or backup code</label>' +
          '<input id="off-code" name="code" type="text" autocomplete="one-time-code" required maxlength="64">' +
          '<p><button type="submit">Turn off two-factor</button></p></form>'
        : '<p>Two-factor sign-in is off.</p>' +
          '<form method="post" action="/account/two-factor"><button type="submit">Turn on two-factor</button></form>';
      return page(
        reply,
        status,
        'Your account',
        notice +
          `<p>Signed in as <strong>${escapeHtml(session.email)}</strong> (${escapeHtml(session.name)}).</p>` +
          `<h2>Workspaces</h2>${list}<h2>Two-factor sign-in</h2>${security}` +
          '<h2>Sessions</h2>' +
          (others.length === 0
            ? '<p>You are signed in here only.</p>'
            : `<p>You are also signed in:</p><ul>${others.join('')}</ul>`) +
          '<form method="post" action="/sign-out"><button type="submit">Sign out</button></form>' +
          '<form method="post" action="/sign-out/everywhere"><p>Signed in on another device you no longer have?</p>' +
          '<button type="submit">Sign out everywhere</button></form>',
      );
    };

    const confirmFields = (error?: string) =>
      '<form method="post" action="/account/two-factor/confirm">' +
      '<label for="confirm-code">Code your authenticator shows</label>' +
      `<input id="confirm-code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" required maxlength="64"${error ? ' aria-invalid="true" aria-describedby="problem"' : ''}>` +
      '<p><button type="submit">Turn on two-factor</button></p></form>';

    scope.post('/account/two-factor', { config }, async (request, reply) => {
      const session = await sessionOf(request);
      if (!session) return see(reply, '/sign-in');
      const { secret, uri } = await startTwoFactorSetup(ports, session);
      return page(
        reply,
        200,
        'Set up your authenticator',
        '<p>Add this account to your authenticator app with the key below (or open the link on the device that has the app), then type the code it shows.</p>' +
          `<p>Key: <code>${escapeHtml(secret)}</code></p><p><a href="${escapeHtml(uri)}">Add to an authenticator app</a></p>` +
          confirmFields(),
      );
    });

    scope.post<{ Body: Form }>('/account/two-factor/confirm', { config }, async (request, reply) => {
      const session = await sessionOf(request);
      if (!session) return see(reply, '/sign-in');
      const form = factorForm.safeParse(request.body ?? {});
      try {
        const code = form.success ? form.data.code : '';
        const backupCodes = await confirmTwoFactor(deps.commands, ports, session, code, now());
        return page(
          reply,
          200,
          'Two-factor sign-in is on',
          '<p>Keep these backup codes somewhere safe: each signs you in once when your authenticator is not at hand. They are shown only now.</p>' +
            `<ul>${backupCodes.map((c) => `<li><code>${c}</code></li>`).join('')}</ul><p><a href="/account">Back to your account</a></p>`,
        );
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        if (error.code === 'code_invalid')
          return page(reply, 400, 'Wrong code', problem(error.message) + confirmFields(error.message));
        return accountPage(reply, session, 400, problem(error.message));
      }
    });

    scope.post<{ Body: Form }>('/account/two-factor/off', { config }, async (request, reply) => {
      const session = await sessionOf(request);
      if (!session) return see(reply, '/sign-in');
      const form = factorForm.safeParse(request.body ?? {});
      try {
        await disableTwoFactor(deps.commands, ports, session, form.success ? form.data.code : '', now());
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        return accountPage(reply, session, 400, problem(error.message));
      }
      return see(reply, '/account');
    });
  });
}

/** A cookie's value from a Cookie header (RFC 6265 §5.4: `name=value` pairs split by `; `). */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const pair of (header ?? '').split(';')) {
    const at = pair.indexOf('=');
    if (at > 0 && pair.slice(0, at).trim() === name) return pair.slice(at + 1).trim();
  }
  return undefined;
}

/**
 * A post a browser says came from another site, or whose Origin is another host. `Origin: null`
 * passes: our pages' `Referrer-Policy: no-referrer` makes browsers send it on their own forms
 * (Fetch, "serializing a request origin"); another site's form is told by `Sec-Fetch-Site`.
 */
export function crossSite(request: FastifyRequest): boolean {
  if (request.headers['sec-fetch-site'] === 'cross-site') return true;
  const origin = request.headers.origin;
  if (!origin || origin === 'null') return false;
  try {
    return new URL(origin).host !== request.headers.host;
  } catch {
    return true;
  }
}
