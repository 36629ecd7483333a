import { z } from 'zod';
import { FONTS_MAX } from '../../../domain/templates/document.ts';
import { FONT_CATALOGUE } from '../../../domain/templates/fonts.ts';
import type { ApiDeps } from '../../deps.ts';
import { pageSchema } from '../../paging.ts';
import { operation, type Operation } from '../../route.ts';

const fontView = z.object({
  object: z.literal('template_font'),
  family: z.string(),
  fallback: z.string(),
  category: z.enum(['sans-serif', 'serif', 'monospace']),
  url: z.null().describe('Web-safe: nothing to download.'),
  weights: z.array(z.number().int()),
  styles: z.array(z.enum(['normal', 'italic'])),
});

/** `GET /templates/fonts`: the fonts a template may use without a file of its own. */
export const fontOperations = (_deps: ApiDeps): Operation[] => [
  operation({
    method: 'GET',
    url: '/templates/fonts',
    operationId: 'listTemplateFonts',
    summary: 'Fonts a template may use',
    description:
      'Scope: `templates:read`. One page: the web-safe fonts every mail client shows, each usable as an entry of a ' +
      `document's \`fonts\` (\`{family, fallback, weight, style}\`, \`url\` null). A hosted font is declared with its own https ` +
      `file as \`url\` (woff2, woff, ttf, otf); clients that fetch no web fonts show its \`fallback\`. At most ${FONTS_MAX} ` +
      'fonts per template (422 `invalid_template` on `document.fonts`).',
    scope: 'templates:read',
    response: pageSchema(fontView),
    handler: async () => ({
      object: 'list' as const,
      data: FONT_CATALOGUE.map((f) => ({ object: 'template_font' as const, ...f, url: null })),
      hasMore: false,
      nextCursor: null,
    }),
  }),
];
