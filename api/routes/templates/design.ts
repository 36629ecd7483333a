import { z } from 'zod';
import { designTemplate } from '../../../commands/templates/design.ts';
import { BRIEF_MAX, type DesignKind } from '../../../domain/templates/design.ts';
import { actorOf } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { operation, type Operation } from '../../route.ts';
import { answerTemplate, idParams, templateOr404, templateView } from './views.ts';

const ACTIONS: [DesignKind, string, string, string][] = [
  [
    'design',
    'designTemplate',
    'Design blocks from a brief',
    'The AI model makes a block document from the brief (an html-engine template gets blocks).',
  ],
  [
    'redesign',
    'redesignTemplate',
    "Restyle a template's blocks from a brief",
    "The AI model restyles the head version's blocks as the brief asks, keeping their text, links and placeholders; a head " +
      'without blocks is 422 `invalid_template` (`param` `engine`).',
  ],
];

/** `/templates/:id/design` and `/templates/:id/redesign`: blocks by the AI port, as a new draft version. */
export const designOperations = (deps: ApiDeps): Operation[] =>
  ACTIONS.map(([kind, operationId, summary, what]) =>
    operation({
      method: 'POST',
      url: `/templates/:id/${kind}`,
      operationId,
      errors: [
        'resource_not_found',
        'invalid_template',
        'ai_not_configured',
        'ai_quota_exceeded',
        'design_failed',
        'invalid_parameter',
      ],
      summary,
      description:
        `Scope: \`templates:write\`. ${what} The document is validated like any other, its placeholders limited to the ` +
        "template's slots and props; it becomes a new draft version on top of the head, never published. Spends one AI action " +
        'of the day (429 `ai_quota_exceeded`, Retry-After to 00:00 UTC). A model that does not answer, or answers with no valid ' +
        'document, is 503 `design_failed`: nothing stored, no action spent. Without a model configured, 409 `ai_not_configured`.',
      scope: 'templates:write',
      params: idParams,
      body: z.strictObject({
        brief: z
          .string()
          .trim()
          .min(1)
          .max(BRIEF_MAX)
          .describe(`What the email should look like, in plain language; 1 to ${BRIEF_MAX} characters.`),
      }),
      response: templateView,
      handler: async ({ credential, params, body, request, reply }) => {
        const row = await templateOr404(deps.db, credential.workspaceId, params.id);
        await designTemplate(
          deps.commands,
          deps.ai,
          actorOf(credential, request.id),
          row.id,
          { kind, brief: body.brief },
          new Date().toISOString(),
        );
        return answerTemplate(deps.db, reply, credential.workspaceId, row.id);
      },
    }),
  );
