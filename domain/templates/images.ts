/**
 * Images a template shows, uploaded to the blob store: which kinds, told by their first bytes
 * (the name and a declared type are the uploader's word; the bytes are what a mail client gets).
 */

/** Decoded bytes per image: mail clients load images on open, and most cap a message near 10 MB. */
export const IMAGE_BYTES_MAX = 5 * 1024 * 1024;

export const IMAGE_TYPES = {
  png: 'image/png',
  jpg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
} as const;
export type ImageExtension = keyof typeof IMAGE_TYPES;

const starts = (bytes: Uint8Array, signature: number[], at = 0) =>
  bytes.length >= at + signature.length && signature.every((b, i) => bytes[at + i] === b);
const ascii = (s: string) => [...s].map((c) => c.charCodeAt(0));

/** The kind of image the bytes are, or null for anything else. */
export function sniffImage(bytes: Uint8Array): ImageExtension | null {
  if (starts(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'png';
  if (starts(bytes, [0xff, 0xd8, 0xff])) return 'jpg';
  if (starts(bytes, ascii('GIF87a')) || starts(bytes, ascii('GIF89a'))) return 'gif';
  if (starts(bytes, ascii('RIFF')) && starts(bytes, ascii('WEBP'), 8)) return 'webp';
  return null;
}
