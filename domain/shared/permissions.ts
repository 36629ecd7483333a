/**
 * The permission vocabulary, shared by roles and API key scopes, in the spec's canonical order.
 * Labels and groups are what a console shows; `scope` false marks console-only permissions that
 * no key or access token can ever hold.
 */
const VOCABULARY = [
  ['emails:send', 'Send email', 'Email'],
  ['emails:read', 'Read sent and received email', 'Email'],
  ['drafts:read', 'Read drafts', 'Email'],
  ['drafts:write', 'Write drafts', 'Email'],
  ['threads:read', 'Read threads', 'Email'],
  ['threads:write', 'Organise threads', 'Email'],
  ['files:read', 'Read files', 'Email'],
  ['files:write', 'Upload files', 'Email'],
  ['labels:read', 'Read labels', 'Email'],
  ['labels:write', 'Manage labels', 'Email'],
  ['contacts:read', 'Read contacts', 'Contacts'],
  ['contacts:write', 'Manage contacts', 'Contacts'],
  ['audiences:read', 'Read audiences', 'Contacts'],
  ['audiences:write', 'Manage audiences', 'Contacts'],
  ['calendar:read', 'Read calendar', 'Calendar'],
  ['calendar:write', 'Manage calendar', 'Calendar'],
  ['templates:read', 'Read templates', 'Templates'],
  ['templates:write', 'Manage templates', 'Templates'],
  ['domains:read', 'Read domains and addresses', 'Domains'],
  ['domains:write', 'Manage domains and addresses', 'Domains'],
  ['webhooks:read', 'Read webhooks', 'Developers'],
  ['webhooks:write', 'Manage webhooks', 'Developers'],
  ['rules:read', 'Read rules', 'Automation'],
  ['rules:write', 'Manage rules', 'Automation'],
  ['connections:read', 'Read connected apps', 'Developers'],
  ['members:read', 'Read members', 'Team'],
  ['members:write', 'Manage members', 'Team'],
  ['roles:read', 'Read roles', 'Team'],
  ['roles:write', 'Manage roles', 'Team'],
  ['settings:read', 'Read settings', 'Settings'],
  ['settings:write', 'Manage settings', 'Settings'],
  ['keys:write', 'Rotate its own key', 'Developers'],
  ['keys:read', 'Read API keys', 'Developers'],
  ['keys:manage', 'Create and revoke API keys', 'Developers'],
  ['forms:read', 'Read forms', 'Forms'],
  ['forms:write', 'Manage forms', 'Forms'],
  ['knowledge:read', 'Read knowledge', 'Assistant'],
  ['knowledge:write', 'Manage knowledge', 'Assistant'],
  ['automations:read', 'Read automations', 'Automation'],
  ['automations:write', 'Manage automations', 'Automation'],
  ['tasks:read', 'Read tasks', 'Assistant'],
  ['tasks:write', 'Manage tasks', 'Assistant'],
  ['connectors:read', 'Read connectors', 'Assistant'],
  ['connectors:use', 'Use connectors', 'Assistant'],
  ['connectors:write', 'Manage connectors', 'Assistant'],
  ['billing:read', 'Read billing', 'Billing'],
  ['billing:write', 'Manage billing', 'Billing'],
  ['account:read', 'Read account', 'Account'],
  ['account:write', 'Manage account', 'Account'],
  ['addresses:all', 'Reach every address', 'Team'],
  ['api-keys:read', 'See API keys in the console', 'Developers'],
  ['api-keys:write', 'Manage API keys in the console', 'Developers'],
  ['workspace:manage', 'Manage the workspace', 'Workspace'],
] as const;

export type Permission = (typeof VOCABULARY)[number][0];

export const PERMISSIONS: readonly Permission[] = VOCABULARY.map(([name]) => name);

export const CONSOLE_ONLY: ReadonlySet<Permission> = new Set<Permission>([
  'addresses:all',
  'billing:read',
  'billing:write',
  'workspace:manage',
  'api-keys:read',
  'api-keys:write',
]);

/** Every permission a key or token may hold. */
export const SCOPEABLE: readonly Permission[] = PERMISSIONS.filter((p) => !CONSOLE_ONLY.has(p));

const IMPLIES: Partial<Record<Permission, Permission[]>> = {
  'templates:write': ['templates:read'],
  'roles:write': ['roles:read', 'members:read'],
};

const ORDER = new Map<string, number>(PERMISSIONS.map((p, i) => [p, i]));

export function isPermission(value: string): value is Permission {
  return ORDER.has(value);
}

/** Implications added, duplicates removed, in canonical order: the stored form of a list. */
export function expandPermissions(list: Iterable<Permission>): Permission[] {
  const set = new Set<Permission>();
  for (const p of list) {
    set.add(p);
    for (const implied of IMPLIES[p] ?? []) set.add(implied);
  }
  return canonical(set);
}

export function canonical(set: Iterable<Permission>): Permission[] {
  return [...new Set(set)].sort((a, b) => ORDER.get(a)! - ORDER.get(b)!);
}

export interface PermissionEntry {
  permission: Permission;
  label: string;
  group: string;
  scope: boolean;
}

export const PERMISSION_ENTRIES: readonly PermissionEntry[] = VOCABULARY.map(([permission, label, group]) => ({
  permission,
  label,
  group,
  scope: !CONSOLE_ONLY.has(permission),
}));
