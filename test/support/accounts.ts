import crypto from 'node:crypto';
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

/** An app's side of PKCE (RFC 7636): a verifier and its S256 challenge. */
export const pkce = () => {
  const verifier = crypto.randomBytes(48).toString('base64url');
  return { verifier, challenge: crypto.createHash('sha256').update(verifier).digest('base64url') };
};

/** The hidden and checked fields of the consent page's form, as a browser would send them. */
export const formFields = (html: string): Record<string, string> => {
  const fields: Record<string, string> = {};
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g))
    fields[m[1]!] = m[2]!
      .replace(/&amp;/g, '&')
      .replace(/&quot;/g, '"')
      .replace(/&#39;/g, "'");
  const checked = /<input type="radio" name="workspace" value="([^"]+)" required checked>/.exec(html);
  if (checked) fields.workspace = checked[1]!;
  return fields;
};
