import type { FastifyReply } from 'fastify';

/** The public pages (forward consent, unsubscribe preferences, sign-in and the account): plain server-rendered HTML, no script. */
export const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/**
 * `formTargets`: origins a form of the page may end at besides ours (the consent page's answer
 * redirects to the app, and browsers hold a redirect after a post to `form-action` too).
 */
export function page(reply: FastifyReply, status: number, title: string, body: string, formTargets: string[] = []) {
  return reply
    .code(status)
    .type('text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('referrer-policy', 'no-referrer')
    .header('x-frame-options', 'DENY')
    .header('x-content-type-options', 'nosniff')
    .header(
      'content-security-policy',
      `default-src 'none'; style-src 'unsafe-inline'; form-action ${["'self'", ...formTargets].join(' ')}`,
    )
    .send(
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
        `<title>${escapeHtml(title)}</title><style>body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem}` +
        `button{font:inherit;padding:.5rem 1rem;margin-right:.5rem}label{display:block;margin:.75rem 0 .25rem}input{font:inherit;padding:.4rem}</style></head>` +
        `<body><main><h1>${escapeHtml(title)}</h1>${body}</main></body></html>`,
    );
}
