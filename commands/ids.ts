import crypto from 'node:crypto';

const hex = (bytes: number) => crypto.randomBytes(bytes).toString('hex');

/** Fresh ids in the spec's shapes; minted here so deciders stay pure. */
export const newId = {
  workspace: () => `ws_${hex(12)}`,
  user: () => `usr_${hex(12)}`,
  role: () => `role_${hex(12)}`,
  template: () => `tpl_${hex(12)}`,
  templateVersion: () => `tplv_${hex(12)}`,
  webhookEndpoint: () => `whe_${hex(12)}`,
  contact: () => `con_${hex(12)}`,
  audience: () => `aud_${hex(12)}`,
  uuid: () => crypto.randomUUID(),
};
