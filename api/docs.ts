import type { FastifyInstance } from 'fastify';
import { CATALOGUE, TYPE_BY_STATUS } from './errors/catalogue.ts';
import { REQUEST_ID_HEADER } from './headers.ts';

/** The generated document's top level, as much of it as is reshaped here. */
export interface OpenApiDocument {
  openapi: string;
  info: Record<string, unknown>;
}

/**
 * The two public documents: the OpenAPI description (api/openapi.ts) and the error table docUrl
 * points into. `servers` names the address the document was fetched from, as docUrl does. The
 * OpenAPI document is built on its first request, not at start-up: few processes are ever asked.
 */
export function registerDocs(app: FastifyInstance, build: () => OpenApiDocument): void {
  let built: OpenApiDocument | null = null;
  app.get('/openapi.json', { config: { auth: false } }, async (request) => {
    built ??= build();
    const { openapi, info, ...rest } = built;
    return {
      openapi,
      info: {
        ...info,
        description:
          `Every answer carries a \`${REQUEST_ID_HEADER}\` header (and \`requestId\` in error bodies), and the ` +
          '`RateLimit-Policy`, `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset` headers. Errors: /docs/errors.',
      },
      servers: [{ url: `${request.protocol}://${request.host}`, description: 'This server' }],
      ...rest,
    };
  });
  app.get('/docs/errors', { config: { auth: false } }, async (_request, reply) => {
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
