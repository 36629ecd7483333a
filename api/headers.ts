export const REQUEST_ID_HEADER = 'Request-Id';
