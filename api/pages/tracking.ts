import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { CLICK_PATH, OPEN_PATH, recordEngagement, type TrackingToken } from '../../commands/emails/tracking.ts';
import type { ApiDeps } from '../deps.ts';
import { page } from './html.ts';

/** A transparent 1x1 GIF. */
const PIXEL = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

/** Every open and click must reach us: no cache on the way (a mail client's image proxy included) keeps an answer. */
const NO_STORE = 'no-store, no-cache, must-revalidate, private, max-age=0';

const userAgentOf = (request: FastifyRequest) => request.headers['user-agent'] ?? null;

/**
 * The open pixel (`GET /t/o/<token>`) and the click redirect (`GET /t/c/<token>`) on a domain's
 * tracking host (its CNAME points at ours), no credential. The pixel answers the GIF whatever the
 * token, so a mail client never shows a broken image, and records an open only for a token of
 * ours. A click token of ours answers 302 to the target it signs, recorded or not; anything else
 * is 404, so the redirect never sends anyone where we did not sign. Wildcard routes: a click
 * token carries its target and can be longer than the router's parameter limit.
 */
export function registerTrackingRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const links = deps.sending.trackingLinks;
  const config = { auth: false };

  const record = async (request: FastifyRequest, token: TrackingToken) => {
    // Fastify answers HEAD with the GET route; link checkers ask HEAD, and what they ask is no click.
    if (request.method !== 'GET') return;
    try {
      await recordEngagement(deps.commands, token, userAgentOf(request), new Date().toISOString());
    } catch (error) {
      // The recipient still gets the image or the page; the fetch is lost, as a blocked image is.
      request.log.error({ err: error }, 'tracking: the open or click was not recorded');
    }
  };

  app.get<{ Params: { '*': string } }>(`${OPEN_PATH}*`, { config }, async (request, reply: FastifyReply) => {
    const token = await links.read(request.params['*']);
    if (token?.kind === 'open') await record(request, token);
    return reply
      .code(200)
      .type('image/gif')
      .header('cache-control', NO_STORE)
      .header('pragma', 'no-cache')
      .header('expires', '0')
      .send(PIXEL);
  });

  app.get<{ Params: { '*': string } }>(`${CLICK_PATH}*`, { config }, async (request, reply: FastifyReply) => {
    const token = await links.read(request.params['*']);
    if (token?.kind !== 'click')
      return page(reply, 404, 'This link does not work', '<p>Check that the whole link from the email was opened.</p>');
    await record(request, token);
    return (
      reply
        .code(302)
        // Serialised by the URL parser: the link as written may hold characters a header cannot.
        .header('location', new URL(token.url).href)
        .header('cache-control', NO_STORE)
        .header('referrer-policy', 'no-referrer')
        .send()
    );
  });
}
