import { ATTACHMENTS_BYTES_MAX } from '../emails/rules.ts';

/** An upload is at most what one message may carry in attachments: a larger file could never be sent. */
export const UPLOAD_BYTES_MAX = ATTACHMENTS_BYTES_MAX;
const FILENAME_MAX = 255;

/** Names a file may not have: control characters, quotes, slashes (a path), nothing but dots. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it refuses
const FILENAME_UNSAFE = /[\u0000-\u001f\u007f"\\/]/;

export function isSafeFilename(name: string): boolean {
  return name.length > 0 && name.length <= FILENAME_MAX && !FILENAME_UNSAFE.test(name) && !/^\.+$/.test(name);
}

/**
 * Extensions that run when opened on the common desktops (Windows' own list of executable and
 * script types, Java archives, shortcuts, installers): refused as `upload_dangerous`, as the large
 * mail providers refuse them as attachments.
 */
const DANGEROUS_EXTENSIONS = new Set(
  (
    'ade adp apk app appx bat cab chm cmd com cpl dll dmg exe hta ins isp jar js jse lib lnk ' +
    'mde msc msi msix msp mst nsh pif ps1 reg scr sct shb sys vb vbe vbs vxd wsc wsf wsh'
  ).split(' '),
);

/** Executables told by their first bytes, whatever their name: PE (`MZ`), ELF, Mach-O. */
const EXECUTABLE_MAGIC = [
  [0x4d, 0x5a],
  [0x7f, 0x45, 0x4c, 0x46],
  [0xfe, 0xed, 0xfa, 0xce],
  [0xfe, 0xed, 0xfa, 0xcf],
  [0xce, 0xfa, 0xed, 0xfe],
  [0xcf, 0xfa, 0xed, 0xfe],
];

/** Whether a file would run when opened: by its extension, or by its bytes. */
export function isDangerous(filename: string, bytes: Uint8Array): boolean {
  const dot = filename.lastIndexOf('.');
  if (dot >= 0 && DANGEROUS_EXTENSIONS.has(filename.slice(dot + 1).toLowerCase())) return true;
  return EXECUTABLE_MAGIC.some((magic) => magic.every((b, i) => bytes[i] === b));
}

const MEDIA_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/;

/** The media type (`type/subtype`, lower-case, no parameters) a file is kept and served as; anything else is `application/octet-stream`. */
export function mediaTypeOf(header: string | undefined): string {
  const type = (header ?? '').split(';')[0]!.trim().toLowerCase();
  return MEDIA_TYPE.test(type) ? type : 'application/octet-stream';
}
