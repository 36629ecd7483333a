import { isPermission, type Permission } from '../shared/permissions.ts';
import type { RoleEvent } from './events.ts';
import type { Builtin } from './seeds.ts';

export interface RoleState {
  name: string;
  description: string | null;
  permissions: Permission[];
  builtin: Builtin | null;
}

export interface RolesState {
  /** Seeding happened once; seeded roles deleted since stay deleted. */
  seeded: boolean;
  roles: Map<string, RoleState>;
}

const permissionsOf = (list: string[]): Permission[] => list.filter(isPermission);

export const rolesAggregate = {
  initialState: { seeded: false, roles: new Map() } as RolesState,
  evolve(state: RolesState, event: RoleEvent): RolesState {
    const roles = new Map(state.roles);
    let seeded = state.seeded;
    switch (event.type) {
      case 'RolesSeeded':
        seeded = true;
        for (const r of event.data.roles) {
          roles.set(r.roleId, {
            name: r.name,
            description: r.description,
            permissions: permissionsOf(r.permissions),
            builtin: r.builtin,
          });
        }
        break;
      case 'OwnerRoleRestored': {
        const r = event.data.role;
        roles.set(r.roleId, {
          name: r.name,
          description: r.description,
          permissions: permissionsOf(r.permissions),
          builtin: r.builtin,
        });
        break;
      }
      case 'RoleCreated':
      case 'RoleUpdated': {
        const d = event.data;
        const builtin = roles.get(d.roleId)?.builtin ?? null;
        roles.set(d.roleId, {
          name: d.name,
          description: d.description,
          permissions: permissionsOf(d.permissions),
          builtin,
        });
        break;
      }
      case 'RoleDeleted':
        roles.delete(event.data.roleId);
        break;
    }
    return { seeded, roles };
  },
};

export const customRoleCount = (state: RolesState) =>
  [...state.roles.values()].filter((r) => r.builtin === null).length;

export const ownerRoleId = (state: RolesState) =>
  [...state.roles.entries()].find(([, r]) => r.builtin === 'owner')?.[0];
