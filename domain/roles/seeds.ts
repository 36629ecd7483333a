import { PERMISSIONS, expandPermissions, type Permission } from '../shared/permissions.ts';

/** The seeded templates in ladder order; the order is also the list order of seeded roles. */
export const BUILTINS = ['owner', 'admin', 'member', 'viewer', 'developer', 'billing'] as const;
export type Builtin = (typeof BUILTINS)[number];

/** Sort rank of a role: its ladder position when seeded; custom roles come after every seeded one. */
export function rankOf(builtin: Builtin | null): number {
  return builtin === null ? BUILTINS.length : BUILTINS.indexOf(builtin);
}

export interface SeedRole {
  name: string;
  description: string;
  permissions: Permission[];
}

const except = (...left: Permission[]) => PERMISSIONS.filter((p) => !left.includes(p));

const MEMBER: Permission[] = [
  'emails:send',
  'emails:read',
  'drafts:read',
  'drafts:write',
  'threads:read',
  'threads:write',
  'files:read',
  'files:write',
  'labels:read',
  'labels:write',
  'contacts:read',
  'contacts:write',
  'audiences:read',
  'calendar:read',
  'calendar:write',
  'templates:read',
  'domains:read',
  'rules:read',
  'members:read',
  'roles:read',
  'settings:read',
  'forms:read',
  'knowledge:read',
  'automations:read',
  'tasks:read',
  'tasks:write',
  'connectors:read',
  'connectors:use',
  'account:read',
  'account:write',
];

/**
 * Reads of the workspace's content and team. Developer-side reads (keys, webhooks, connected apps)
 * and console-only reads (billing, console API keys) stay with the roles that work on them.
 */
const VIEWER: Permission[] = [
  'emails:read',
  'drafts:read',
  'threads:read',
  'files:read',
  'labels:read',
  'contacts:read',
  'audiences:read',
  'calendar:read',
  'templates:read',
  'domains:read',
  'rules:read',
  'members:read',
  'roles:read',
  'settings:read',
  'forms:read',
  'knowledge:read',
  'automations:read',
  'tasks:read',
  'connectors:read',
  'account:read',
];

const DEVELOPER: Permission[] = [
  'emails:send',
  'emails:read',
  'templates:read',
  'templates:write',
  'domains:read',
  'domains:write',
  'webhooks:read',
  'webhooks:write',
  'keys:write',
  'keys:read',
  'keys:manage',
  'api-keys:read',
  'api-keys:write',
  'settings:read',
  'automations:read',
  'automations:write',
  'account:read',
  'account:write',
];

const BILLING: Permission[] = [
  'billing:read',
  'billing:write',
  'account:read',
  'account:write',
  'settings:read',
  'members:read',
];

export const SEEDS: Record<Builtin, SeedRole> = {
  owner: {
    name: 'Owner',
    description: 'Every permission. Cannot be edited or deleted.',
    permissions: [...PERMISSIONS],
  },
  admin: {
    name: 'Admin',
    description: 'Runs the workspace day to day; no billing and no workspace management.',
    permissions: except('workspace:manage', 'billing:read', 'billing:write'),
  },
  member: { name: 'Member', description: 'Sends, reads and organises mail and contacts.', permissions: MEMBER },
  viewer: { name: 'Viewer', description: 'Reads the workspace; changes nothing.', permissions: VIEWER },
  developer: {
    name: 'Developer',
    description: 'Integrations: sending, templates, domains, webhooks and API keys.',
    permissions: DEVELOPER,
  },
  billing: { name: 'Billing', description: 'Billing and the own account.', permissions: BILLING },
};

/** A seeded role as stored: permissions expanded, in canonical order. */
export function seedRole(builtin: Builtin, roleId: string) {
  const seed = SEEDS[builtin];
  return {
    roleId,
    builtin,
    name: seed.name,
    description: seed.description,
    permissions: expandPermissions(seed.permissions),
  };
}
