import Fastify, { type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import type { ApiDeps } from './deps.ts';
import { registerDocs } from './docs.ts';
import { newRequestId, REQUEST_ID_HEADER } from './headers.ts';
import { refuseUnsafeHeaders } from './input.ts';
import { registerAuth } from './plugins/auth.ts';
import { answerClientError, answerFrameworkError, registerErrorHandling } from './plugins/errors.ts';
import { mount } from './route.ts';
import { audiences } from './routes/audiences/index.ts';
import { automations } from './routes/automations/index.ts';
import { contactEvents } from './routes/contact-events/index.ts';
import { contacts } from './routes/contacts/index.ts';
import { domains } from './routes/domains/index.ts';
import { keys } from './routes/keys/index.ts';
import { roles } from './routes/roles/index.ts';
import { self } from './routes/self/index.ts';
import { suppressions } from './routes/suppressions/index.ts';
import { templates } from './routes/templates/index.ts';
import { webhooks } from './routes/webhooks/index.ts';

/** Every resource of the api, in the order the OpenAPI document lists them. */
const RESOURCES = [
  self,
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
  // The zod schemas validate (api/route.ts); the JSON schemas fastify sees are documentation only.
  // `true`, not `{value}`: a value makes fastify set it back, and a set `request.headers` is a fresh
  // merged copy on every later read.
  app.setValidatorCompiler(() => () => true);
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));

  app.addHook('onRequest', async (request, reply) => {
    reply.header(REQUEST_ID_HEADER, request.id);
  });
  registerErrorHandling(app);
  registerAuth(app, deps);
  // After the count, so a refused request is counted and logged as every other refusal is.
  app.addHook('onRequest', async (request) => refuseUnsafeHeaders(request.headers));

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Workspace Mail Service', version: '0.1.0' },
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API key: `wms_live_…` or `wms_test_…`.' },
        },
      },
    },
  });
  registerDocs(app);
  for (const resource of RESOURCES) mount(app, deps, resource);
  return app;
}
