import Fastify, { type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import type { ApiDeps } from './deps.ts';
import { partitionByMode } from './modes.ts';
import { newRequestId, REQUEST_ID_HEADER } from './headers.ts';
import { refuseUnsafeHeaders } from './input.ts';
import { registerAuth } from './plugins/auth.ts';
import { answerClientError, answerFrameworkError, registerErrorHandling } from './plugins/errors.ts';
import { registerAudiences } from './routes/audiences.ts';
import { registerContacts } from './routes/contacts.ts';
import { registerAutomations } from './routes/automations.ts';
import { registerContactEvents } from './routes/contact-events.ts';
import { registerDocs } from './routes/docs.ts';
import { registerKeys } from './routes/keys.ts';
import { registerRoles } from './routes/roles.ts';
import { registerSelf } from './routes/self.ts';
import { registerSuppressions } from './routes/suppressions.ts';
import { registerTemplates } from './routes/templates.ts';
import { registerWebhooks } from './routes/webhooks.ts';

export async function buildServer(deps: ApiDeps, options: { logger?: boolean | object } = {}): Promise<FastifyInstance> {
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

  // Every route's handler runs under it (api/route.ts), in whatever scope the route is registered.
  app.decorate('idempotencyKeys', deps.idempotencyKeys);
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
      components: { securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API key: `wms_live_…` or `wms_test_…`.' } } },
    },
  });
  registerDocs(app);
  registerSelf(app, deps);
  registerKeys(app, deps);
  registerRoles(app, deps);
  registerTemplates(app, deps);
  // The resources test mode keeps apart (api/modes.ts); everything outside is configuration both modes share.
  await app.register(async (partitioned) => {
    partitionByMode(partitioned);
    registerSuppressions(partitioned, deps);
    registerWebhooks(partitioned, deps);
    registerAutomations(partitioned, deps);
    // Each in its own scope: their hook refuses narrowed credentials on these routes alone.
    await partitioned.register((scope) => registerContactEvents(scope, deps));
    await partitioned.register((scope) => registerContacts(scope, deps));
    await partitioned.register((scope) => registerAudiences(scope, deps));
  });
  return app;
}
