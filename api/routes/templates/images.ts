import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { IMAGE_BYTES_MAX, IMAGE_TYPES, type ImageExtension, sniffImage } from '../../../domain/templates/images.ts';
import { activeStorageHost } from '../../../projections/domains/queries.ts';
import type { ApiDeps } from '../../deps.ts';
import { ApiError } from '../../errors/api-error.ts';
import { operation, type Operation } from '../../route.ts';
import { idParams, templateOr404 } from './views.ts';

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
/** Base64 of `IMAGE_BYTES_MAX` bytes, and room for the rest of the body. */
const bodyLimit = Math.ceil(IMAGE_BYTES_MAX / 3) * 4 + 64 * 1024;

/** Where an image is served: `/template-images/<sha256>-<mac>.<ext>`. */
export const IMAGE_PATH = '/template-images/';

/**
 * The MAC of an image's name under the server's image key: only images uploaded here are served,
 * never another blob of the store (a raw message, an attachment) whose hash someone came to know.
 */
export const imageMac = (key: Buffer, sha256: string, ext: string) =>
  createHmac('sha256', key).update(`${sha256}.${ext}`).digest('base64url').slice(0, 22);

/** The name's parts when its MAC is right, else null. */
export function checkImageName(key: Buffer, name: string): { sha256: string; ext: ImageExtension } | null {
  const m = /^([0-9a-f]{64})-([A-Za-z0-9_-]{22})\.(png|jpg|gif|webp)$/.exec(name);
  if (!m) return null;
  const [, sha256, mac, ext] = m as unknown as [string, string, string, ImageExtension];
  const want = Buffer.from(imageMac(key, sha256, ext));
  return timingSafeEqual(Buffer.from(mac), want) ? { sha256, ext } : null;
}

export const imageOperations = (deps: ApiDeps): Operation[] => [
  operation({
    method: 'POST',
    url: '/templates/:id/images',
    operationId: 'uploadTemplateImage',
    errors: ['resource_not_found', 'image_not_stored'],
    summary: 'Upload an image for a template',
    description:
      'Scope: `templates:write`. `content` is the image in base64: PNG, JPEG, GIF or WebP, told by its bytes, at most 5 MiB ' +
      'decoded (otherwise 422 `invalid_parameter` on `content`). Answers its `url`, for an `Img` block `src`: served by ' +
      "the workspace's storage host when one of its domains has storage `active`, else by this service. The same bytes " +
      'answer the same url. 502 `image_not_stored` when the store fails (retry unchanged).',
    scope: 'templates:write',
    bodyLimit,
    params: idParams,
    body: z.strictObject({ content: z.string().min(1).describe('Base64.') }),
    status: 201,
    response: z.object({
      object: z.literal('template_image'),
      templateId: z.string(),
      url: z.string(),
      contentType: z.enum(Object.values(IMAGE_TYPES) as [string, ...string[]]),
      size: z.number().int(),
      sha256: z.string(),
    }),
    handler: async ({ credential, params, body }) => {
      const row = await templateOr404(deps.db, credential.workspaceId, params.id);
      const encoded = body.content.replace(/\s+/g, '');
      if (encoded.length % 4 !== 0 || !BASE64.test(encoded))
        throw new ApiError('invalid_parameter', 'The content is base64.', 'content');
      const bytes = Buffer.from(encoded, 'base64');
      if (bytes.length > IMAGE_BYTES_MAX)
        throw new ApiError('invalid_parameter', `At most ${IMAGE_BYTES_MAX} bytes, decoded.`, 'content');
      const ext = sniffImage(bytes);
      if (ext === null) throw new ApiError('invalid_parameter', 'A PNG, JPEG, GIF or WebP image.', 'content');
      let stored: { sha256: string; size: number };
      try {
        stored = await deps.sending.blobs.put(bytes);
      } catch {
        throw new ApiError('image_not_stored', 'The image could not be stored; retry unchanged.', null, 502);
      }
      const host = await activeStorageHost(deps.db, credential.workspaceId);
      const base = host ? `https://${host}` : deps.images.publicUrl;
      return {
        object: 'template_image' as const,
        templateId: row.id,
        url: `${base}${IMAGE_PATH}${stored.sha256}-${imageMac(deps.images.key, stored.sha256, ext)}.${ext}`,
        contentType: IMAGE_TYPES[ext],
        size: stored.size,
        sha256: stored.sha256,
      };
    },
  }),
];
