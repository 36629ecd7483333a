/**
 * Id shapes from the spec's Conventions. Random bytes are passed in by the caller (commands),
 * so deciders stay pure and tests can use fixed ids.
 */
export const idPatterns = {
  workspace: /^ws_[0-9a-f]{24}$/,
  user: /^usr_[0-9a-f]{24}$/,
  role: /^role_[0-9a-f]{24}$/,
  template: /^tpl_[0-9a-f]{24}$/,
  contact: /^con_[0-9a-f]{24}$/,
  audience: /^aud_[0-9a-f]{24}$/,
  contactEvent: /^cev_[0-9a-f]{24}$/,
  apiKey: /^[0-9a-z]{24}$/,
  suppression: /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
} as const;
