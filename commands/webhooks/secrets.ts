import crypto from 'node:crypto';

/** A new signing secret in Standard Webhooks' form: `whsec_` and 24 random bytes in base64. */
export const newWebhookSecret = () => `whsec_${crypto.randomBytes(24).toString('base64')}`;
