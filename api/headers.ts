import crypto from 'node:crypto';

export const REQUEST_ID_HEADER = 'Request-Id';

/** `req_` + 24 hex: ours alone, on every answer (a client-sent id is never taken). */
export const newRequestId = () => `req_${crypto.randomBytes(12).toString('hex')}`;
