/** The part of libmime (the mail stack's MIME word codec, no types of its own) used here. */
declare module 'libmime' {
  const libmime: {
    /** Decodes RFC 2047 encoded words (`=?UTF-8?Q?...?=`) in a header value. */
    decodeWords(value: string): string;
    /** A structured header value (`multipart/report; report-type=...`) as its value and parameters. */
    parseHeaderValue(value: string): { value: string; params: Record<string, string> };
  };
  export default libmime;
}
