/** Errors of the network or the operating system that mean the server could not be reached. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);
/** SQLSTATEs of a server going away or not taking connections: shutdown, crash, start-up, full. */
const SERVER_GONE = new Set(['57P01', '57P02', '57P03', '53300']);
/** node-postgres' own words for a connection that ended or never came. */
const CLIENT_GONE = [
  'Connection terminated',
  'Client has encountered a connection error and is not queryable',
  'Client was closed and is not queryable',
  'timeout exceeded when trying to connect',
];

/**
 * Did the database not answer (down, restarting, the connection cut), rather than refuse the
 * statement? Such a failure is worth retrying unchanged; it says nothing of whether a statement
 * in flight took effect.
 */
export function isUnreachable(error: unknown, depth = 0): boolean {
  if (!error || typeof error !== 'object' || depth > 3) return false;
  const e = error as { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown };
  if (typeof e.code === 'string' && (NETWORK_CODES.has(e.code) || SERVER_GONE.has(e.code) || e.code.startsWith('08')))
    return true;
  if (typeof e.message === 'string' && CLIENT_GONE.some((m) => (e.message as string).startsWith(m))) return true;
  if (Array.isArray(e.errors) && e.errors.some((inner) => isUnreachable(inner, depth + 1))) return true;
  return isUnreachable(e.cause, depth + 1);
}
