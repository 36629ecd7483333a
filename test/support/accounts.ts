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

/**
 * Waits for the mail of a challenge's code to reach `email`, and answers the code. The code a
 * challenge should have is made from the server key (`codes`), so a mail of another challenge
 * never stands in for it.
 */
export const mailedCode = async (mails: Mail[], email: string, expected: string): Promise<string> =>
  eventually(async () =>
    mails.some(
      (m) => m.to.includes(email) && m.subject === `${expected} is your sign-in code` && m.text.includes(expected),
    )
      ? expected
      : undefined,
  );
