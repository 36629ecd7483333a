import { mailedLinks } from '../mailed-links.ts';

/**
 * The link a forward's destination answers with (`<forward id>.<nonce>.<mac>`). Only the nonce of
 * the last link mailed works (domain/addresses/decide.ts), so a resend retires the earlier links.
 */
export const consentLinks = mailedLinks('forward-consent');
