import { newId } from '../commands/ids.ts';

export const REQUEST_ID_HEADER = 'Request-Id';

/** `req_` + 24 hex: ours alone, on every answer (a client-sent id is never taken). */
export const newRequestId = newId.request;
