import Fastify, { type FastifyInstance } from 'fastify';
import type { ApiDeps } from './deps.ts';
import { registerDocs } from './docs.ts';
import { registerForwardConsentPages } from './pages/forward-consent.ts';
import { registerTemplateImages } from './pages/template-images.ts';
import { registerTrackingRoutes } from './pages/tracking.ts';
import { registerUnsubscribePages } from './pages/unsubscribe.ts';
import { newRequestId, REQUEST_ID_HEADER } from './headers.ts';
import { refuseUnsafeHeaders } from './input.ts';
import { openApiDocument } from './openapi.ts';
import { registerAuth } from './plugins/auth.ts';
import { answerClientError, answerFrameworkError, registerErrorHandling } from './plugins/errors.ts';
import { mount } from './route.ts';
import { addresses } from './routes/addresses/index.ts';
import { audiences } from './routes/audiences/index.ts';
import { automations } from './routes/automations/index.ts';
import { broadcasts } from './routes/broadcasts/index.ts';
import { providerImports } from './routes/provider-imports/index.ts';
import { imports } from './routes/imports/index.ts';
import { workspaceExports } from './routes/exports/index.ts';
import { contactEvents } from './routes/contact-events/index.ts';
import { contacts } from './routes/contacts/index.ts';
import { domains } from './routes/domains/index.ts';
import { drafts } from './routes/drafts/index.ts';
import { keys } from './routes/keys/index.ts';
import { roles } from './routes/roles/index.ts';
import { self } from './routes/self/index.ts';
import { stepUp } from './routes/step-up/index.ts';
import { sendingStreams } from './routes/sending-streams/index.ts';
import { threads } from './routes/threads/index.ts';
import { labels } from './routes/labels/index.ts';
import { rules } from './routes/rules/index.ts';
import { tasks } from './routes/tasks/index.ts';
import { members } from './routes/members/index.ts';
import { registerInvitationPages } from './pages/invitations.ts';
import { registerAccountPages } from './pages/accounts.ts';
import { registerOAuthPages } from './pages/oauth.ts';
import { signatures } from './routes/signatures/index.ts';
import { emails } from './routes/emails/index.ts';
import { files } from './routes/files/index.ts';
import { suppressions } from './routes/suppressions/index.ts';
import { templateMail } from './routes/template-mail/index.ts';
import { tempMail } from './routes/temp-mail/index.ts';
import { templates } from './routes/templates/index.ts';
import { webhooks } from './routes/webhooks/index.ts';

/** Every resource of the api, in the order the OpenAPI document lists them. */
const RESOURCES = [
  self,
  stepUp,
  keys,
  roles,
  templates,
  domains,
  suppressions,
  webhooks,
  automations,
  contactEvents,
  contacts,
  audiences,
  addresses,
  signatures,
  emails,
  templateMail,
  sendingStreams,
  broadcasts,
  providerImports,
  imports,
  workspaceExports,
  threads,
  labels,
  rules,
  tasks,
  files,
  drafts,
  members,
  tempMail,
];

export async function buildServer(
  deps: ApiDeps,
  options: { logger?: boolean | object } = {},
): Promise<FastifyInstance> {
  const app = Fastify({
    logger: options.logger ?? false,
    genReqId: newRequestId,
    // Ids are ours alone: a client-sent id would let one caller forge another's log lines.
    requestIdHeader: false,
    bodyLimit: 2 * 1024 * 1024,
    trustProxy: false,
    // Contact routes take an address in the path (up to 320 characters, 400 accepted by their
    // schema); the router's default of 100 refused longer ones with a 414 before any route ran.
    routerOptions: { maxParamLength: 400 },
    frameworkErrors: answerFrameworkError(deps),
    clientErrorHandler: answerClientError,
  });
  app.addHook('onRequest', async (request, reply) => {
    reply.header(REQUEST_ID_HEADER, request.id);
  });
  registerErrorHandling(app);
  registerAuth(app, deps);
  // After the count, so a refused request is counted and logged as every other refusal is.
  app.addHook('onRequest', async (request) => refuseUnsafeHeaders(request.headers));

  const operations = RESOURCES.flatMap((resource) => mount(app, deps, resource));
  registerDocs(app, () => openApiDocument(RESOURCES, operations));
  registerForwardConsentPages(app, deps);
  registerInvitationPages(app, deps);
  registerAccountPages(app, deps);
  registerOAuthPages(app, deps);
  registerUnsubscribePages(app, deps);
  registerTrackingRoutes(app, deps);
  registerTemplateImages(app, deps);
  return app;
}
