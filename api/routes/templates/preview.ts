import { z } from 'zod';
import { translateSpending, translationTarget } from '../../../commands/emails/translate.ts';
import { previewVersion } from '../../../commands/templates/render.ts';
import { actorOf } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { operation, type Operation } from '../../route.ts';
import { idParams, templateOr404, templateVersionOr422 } from './views.ts';

const values = z.record(z.string(), z.unknown());
const now = () => new Date().toISOString();

/** `POST /templates/:id/preview`: a version as it would look, with sample values where none are given. */
export const previewOperations = (deps: ApiDeps): Operation[] => [
  operation({
    method: 'POST',
    url: '/templates/:id/preview',
    operationId: 'previewTemplate',
    errors: [
      'resource_not_found',
      'template_version_not_found',
      'unknown_template_prop',
      'unknown_template_slot',
      'translation_not_configured',
      'unknown_language',
      'translation_too_long',
      'ai_quota_exceeded',
      'translation_failed',
    ],
    summary: 'Preview a version',
    openToTestKeys: true,
    description:
      'Scope: `templates:read`. Renders a version (default: the head, draft or published; archived templates too) without ' +
      'sending: `subject`, `preview` (the preview line, at most 256 characters as written), `html` and `text`. A prop or slot ' +
      'not given takes its default, else a sample of its type (`[name]`, 42, true, `https://example.com/`); `values` answers ' +
      'what was used. Unlike `render`, nothing missing is refused; an undeclared prop or slot is still 422 ' +
      '`unknown_template_prop` / `unknown_template_slot`, and a given value of the wrong type 422 `invalid_parameter`. ' +
      '`translate` shows subject, html and text as a send with `translate` would (the preview line stays as written) and, as ' +
      "a send, spends one of the day's AI actions, with the send's codes: 409 `translation_not_configured`, 422 " +
      '`unknown_language`, `translation_too_long`, 429 `ai_quota_exceeded` (Retry-After), 503 `translation_failed`.',
    scope: 'templates:read',
    params: idParams,
    body: z.strictObject({
      version: z.number().int().positive().optional(),
      props: values.optional(),
      slots: values.optional(),
      translate: z
        .strictObject({ to: z.string().max(35).describe('A BCP 47 language tag (`de`, `pt-BR`).') })
        .optional(),
    }),
    response: z.object({
      object: z.literal('template_preview'),
      templateId: z.string(),
      version: z.number().int(),
      state: z.enum(['draft', 'published']),
      subject: z.string(),
      preview: z.string(),
      html: z.string(),
      text: z.string(),
      values: z.object({ props: values, slots: values }),
    }),
    handler: async ({ credential, params, body, request }) => {
      const target = body.translate ? translationTarget(deps.ai, body.translate.to, 'translate.to') : null;
      const row = await templateOr404(deps.db, credential.workspaceId, params.id);
      const v = await templateVersionOr422(deps.db, row.id, body.version ?? row.latest_version);
      const shown = await previewVersion(deps.renderer, { ...v, sanitisedHtml: v.sanitised_html }, row.revision, {
        props: body.props,
        slots: body.slots,
      });
      const base = {
        object: 'template_preview' as const,
        templateId: row.id,
        version: v.version,
        state: v.published ? ('published' as const) : ('draft' as const),
      };
      if (target === null) return { ...base, ...shown };
      const actor = actorOf(credential, request.id);
      const parts = await translateSpending(
        deps.commands,
        deps.ai,
        actor,
        credential.workspaceId,
        shown,
        target,
        now(),
      );
      // A template's html was sanitised when published; its translation is the model's markup.
      return {
        ...base,
        ...shown,
        subject: parts.subject,
        html: deps.commands.sanitiseHtml(parts.html ?? ''),
        text: parts.text ?? '',
      };
    },
  }),
];
