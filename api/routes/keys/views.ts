import { z } from 'zod';
import { findActiveKey, type ApiKeyRow } from '../../../projections/api-keys/queries.ts';
import type { Credential } from '../../credential.ts';
import { lookup } from '../../lookups.ts';

export const credentialDescription = z.object({
  object: z.enum(['api_key', 'oauth_token']),
  kind: z.enum(['apiKey', 'oauth']),
  id: z.string().nullable(),
  mode: z.enum(['live', 'test']),
  scopes: z.array(z.string()),
  grantedScopes: z.array(z.string()),
  roleId: z.string().nullable(),
  workspaceId: z.string(),
  addressAllowlist: z.array(z.string()).nullable(),
  domainAllowlist: z.array(z.string()).nullable(),
  clientId: z.string().optional(),
  expiresAt: z.string().nullable().optional(),
});

export function describeCredential(c: Credential): z.infer<typeof credentialDescription> {
  const common = {
    mode: c.mode,
    scopes: c.scopes,
    grantedScopes: c.grantedScopes,
    workspaceId: c.workspaceId,
    addressAllowlist: c.addressAllowlist,
    domainAllowlist: c.domainAllowlist,
  };
  if (c.kind === 'oauth') {
    return {
      object: 'oauth_token',
      kind: 'oauth',
      id: null,
      roleId: null,
      ...common,
      mode: 'live',
      clientId: c.clientId,
      expiresAt: c.expiresAt ?? null,
    };
  }
  return { object: 'api_key', kind: 'apiKey', id: c.id, roleId: c.roleId, ...common };
}

export const apiKeyView = z.object({
  object: z.literal('api_key'),
  id: z.string(),
  name: z.string().nullable(),
  mode: z.enum(['live', 'test']),
  scopes: z.array(z.string()),
  roleId: z.string().nullable(),
  addressAllowlist: z.array(z.string()).nullable(),
  domainAllowlist: z.array(z.string()).nullable(),
  expiresAt: z.string().nullable(),
  createdAt: z.string(),
  rotationCount: z.number().int(),
  rotatedAt: z.string().nullable(),
});

export function viewApiKey(row: ApiKeyRow): z.infer<typeof apiKeyView> {
  return {
    object: 'api_key',
    id: row.id,
    name: row.name,
    mode: row.mode,
    scopes: row.scopes,
    roleId: row.role_id,
    addressAllowlist: row.address_allowlist,
    domainAllowlist: row.domain_allowlist,
    expiresAt: row.expires_at?.toISOString() ?? null,
    createdAt: row.created_at.toISOString(),
    rotationCount: row.rotation_count,
    rotatedAt: row.rotated_at?.toISOString() ?? null,
  };
}

export const keyOr404 = lookup(findActiveKey, { code: 'resource_not_found', message: 'No such API key.', param: 'id' });
