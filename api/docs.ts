import type { FastifyInstance } from 'fastify';
import { CATALOGUE, TYPE_BY_STATUS } from './errors/catalogue.ts';
import { REQUEST_ID_HEADER } from './headers.ts';

/** The two public documents: the OpenAPI description and the error table docUrl points into. */
export function registerDocs(app: FastifyInstance): void {
  app.get('/openapi.json', { schema: { hide: true }, config: { auth: false } }, async () => {
    const doc = app.swagger() as { info: { description?: string } };
    doc.info.description =
      `Every answer carries a \`${REQUEST_ID_HEADER}\` header (and \`requestId\` in error bodies), and the ` +
      '`RateLimit-Policy`, `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset` headers. Errors: /docs/errors.';
    return doc;
  });
  app.get('/docs/errors', { schema: { hide: true }, config: { auth: false } }, async (_request, reply) => {
    const rows = Object.entries(CATALOGUE)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(
        ([code, [status, meaning]]) =>
          `<tr id="${code}"><td><code>${code}</code></td><td>${status}</td><td>${TYPE_BY_STATUS[status]}</td><td>${escapeHtml(meaning)}</td></tr>`,
      )
      .join('\n');
    return reply
      .type('text/html; charset=utf-8')
      .send(
        `<!doctype html><title>Errors</title><h1>Errors</h1><table><tr><th>code</th><th>status</th><th>type</th><th>meaning</th></tr>\n${rows}\n</table>`,
      );
  });
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
}
