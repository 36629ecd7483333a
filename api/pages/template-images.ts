import type { FastifyInstance } from 'fastify';
import { IMAGE_TYPES, sniffImage } from '../../domain/templates/images.ts';
import type { ApiDeps } from '../deps.ts';
import { checkImageName, IMAGE_PATH } from '../routes/templates/images.ts';

/**
 * Template images as mail clients fetch them, no credential: by the name the upload answered
 * (`<sha256>-<mac>.<ext>`), the same on our host and on a domain's storage host (its CNAME points
 * here). A name without its MAC, or bytes that are not that kind of image, answer 404.
 */
export function registerTemplateImages(app: FastifyInstance, deps: ApiDeps): void {
  app.get<{ Params: { name: string } }>(`${IMAGE_PATH}:name`, { config: { auth: false } }, async (request, reply) => {
    const named = checkImageName(deps.images.key, request.params.name);
    const bytes = named && (await deps.sending.blobs.get(named.sha256));
    if (!named || !bytes || sniffImage(bytes) !== named.ext) {
      return reply.code(404).header('content-type', 'text/plain; charset=utf-8').send('Not found');
    }
    return reply
      .header('content-type', IMAGE_TYPES[named.ext])
      .header('cache-control', 'public, max-age=31536000, immutable')
      .header('x-content-type-options', 'nosniff')
      .send(bytes);
  });
}
