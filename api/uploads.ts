import { isSafeFilename } from '../domain/files/rules.ts';
import { ApiError } from './errors/api-error.ts';

/** The name an upload gives: `X-Filename` (percent-encoded UTF-8 allowed, as headers are ASCII) or `filename`. */
export function uploadName(header: string | string[] | undefined, query: string | undefined): string {
  const raw = Array.isArray(header) ? header[0] : header;
  let name = query;
  if (raw !== undefined) {
    try {
      name = decodeURIComponent(raw);
    } catch {
      throw new ApiError('invalid_parameter', '`X-Filename` is not valid percent-encoded UTF-8.', 'X-Filename', 422);
    }
  }
  if (name === undefined || name.trim() === '')
    throw new ApiError(
      'upload_no_name',
      'Name the file in the `X-Filename` header or the `filename` query parameter.',
      'filename',
      400,
    );
  const trimmed = name.trim();
  if (!isSafeFilename(trimmed))
    throw new ApiError(
      'invalid_parameter',
      '1 to 255 characters, without control characters, quotes or slashes.',
      'filename',
      422,
    );
  return trimmed;
}
