import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { eventually } from './receiver.ts';
import type { Mail } from './smtp.ts';

/** Posts a form the way a browser sends it. */
export const postForm = (
  app: FastifyInstance,
  url: string,
  fields: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> =>
  app.inject({
    method: 'POST',
    url,
    payload: new URLSearchParams(fields).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
  });

/** The challenge a sign-in page carries in its form. */
export const challengeIn = (html: string): string => {
  const found = /name="challenge" value="([^"]+)"/.exec(html)?.[1];
  if (!found) throw new Error(`no challenge in the page: ${html}`);
  return found;
};

/** The cookie to send back, from a Set-Cookie answer. */
export const sessionCookie = (response: LightMyRequestResponse): string =>
  String(response.headers['set-cookie']).split(';')[0]!;

/** The `n`-th sign-in code mailed to `email` (the mail's subject starts with it). */
export const mailedCode = (mails: Mail[], email: string, n = 0): Promise<string> =>
  eventually(async () =>
    mails.filter((m) => m.to.includes(email) && /sign-in code/.test(m.subject))[n]?.subject.slice(0, 6),
  );
