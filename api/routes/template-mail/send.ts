import { z } from 'zod';
import { sendEmail } from '../../../commands/emails/handlers.ts';
import { DomainError } from '../../../domain/shared/errors.ts';
import { workspaceOfPartition } from '../../../domain/shared/partitions.ts';
import { actorOf } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { reachOf } from '../../narrowing.ts';
import { operation, type Operation } from '../../route.ts';
import { emailView, viewAccepted } from '../emails/views.ts';
import { SEND_BODY_ERRORS, sendBody } from '../emails/operations.ts';
import { idParams, templateOr404 } from '../templates/views.ts';

/** The body of `POST /emails` with the template fixed by the path: its props at the top, no body of its own. */
const templateSendBody = sendBody.omit({ template: true, text: true, html: true }).extend({
  props: z.record(z.string(), z.unknown()).optional().describe("Values of the published version's props."),
});

/**
 * Refusals `sendEmail` names under `template` are about this route's path and `props`: the
 * template's standing (`template`) answers on `id`, a prop on `props.<name>`.
 */
function asRouteParam(error: DomainError): DomainError {
  const param = error.param;
  if (param === 'template') return new DomainError(error.code, error.message, 'id');
  if (param?.startsWith('template.')) return new DomainError(error.code, error.message, param.slice(9));
  return error;
}

export const templateSendOperations = (deps: ApiDeps): Operation[] => [
  operation({
    method: 'POST',
    url: '/templates/:id/send',
    operationId: 'sendTemplate',
    // A send's refusals, less `template_not_found`: here the template is the path's, a 404.
    errors: ['resource_not_found', ...SEND_BODY_ERRORS.filter((code) => code !== 'template_not_found')],
    summary: 'Send with a template',
    description:
      'Scope: `emails:send` (as `POST /emails` with `template`). The body of `POST /emails` without `template`, `text` and ' +
      "`html`, and with `props`: the template's published version, rendered with them. 422 `template_not_published` until a " +
      'version is published, 422 `template_archived` while archived (`param` `id`); an unknown prop is 422 ' +
      "`unknown_template_prop` on `props.<name>`. `subject` replaces the template's.",
    scope: 'emails:send',
    params: idParams,
    body: templateSendBody,
    bodyLimit: 16 * 1024 * 1024,
    status: 201,
    response: emailView,
    handler: async ({ credential, params, body, request }) => {
      // Templates belong to the workspace; the email to the credential's mode partition.
      const row = await templateOr404(deps.db, workspaceOfPartition(credential.workspaceId), params.id);
      const { props, ...rest } = body;
      try {
        const { email } = await sendEmail(
          { commands: deps.commands, sending: deps.sending },
          {
            actor: actorOf(credential, request.id),
            mode: credential.mode,
            reach: reachOf(credential),
            viewOnly: credential.viewOnly ?? null,
            source: 'api',
          },
          { ...rest, template: { id: row.id, ...(props !== undefined ? { props } : {}) } },
          new Date(),
        );
        return viewAccepted(email);
      } catch (error) {
        if (error instanceof DomainError) throw asRouteParam(error);
        throw error;
      }
    },
  }),
];
