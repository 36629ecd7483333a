/** What became of one recipient on one delivery attempt. */
export type RecipientStatus = 'delivered' | 'deferred' | 'bounced';

/**
 * An SMTP reply code as an outcome (RFC 5321 4.2.1): 2xx the server took the mail, 5xx it never
 * will (permanent), anything else is worth another try later. 4xx is transient by definition; a
 * 1xx or 3xx where a final answer was due is a broken server, and a broken server is retried
 * rather than taken at its word.
 */
export function statusOfReply(code: number): RecipientStatus {
  if (code >= 200 && code < 300) return 'delivered';
  if (code >= 500 && code < 600) return 'bounced';
  return 'deferred';
}

/**
 * The enhanced status code (RFC 3463, carried per RFC 2034) at the start of a reply's text:
 * `550 5.1.1 No such user` gives `5.1.1`. Its class must agree with the reply code's first digit;
 * one that contradicts it is not trusted. null when the reply carries none.
 */
export function enhancedCodeOf(reply: string): string | null {
  const match = /^([245])\d\d[ -]([245])\.(\d{1,3})\.(\d{1,3})(?=\s|$)/.exec(reply);
  if (!match || match[1] !== match[2]) return null;
  return `${match[2]}.${Number(match[3])}.${Number(match[4])}`;
}
