import { mailedLinks } from '../mailed-links.ts';

/**
 * The invitation's acceptance link (`<invitation id>.<nonce>.<mac>`), under a server key of its own.
 * A refresh draws a new nonce, so only the newest link works.
 */
export const invitationLinks = mailedLinks('member-invitation');
