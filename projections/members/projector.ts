import type { Kysely } from 'kysely';
import { defineProjector, type Projected } from '../projector.ts';
import type { MembersTables } from './tables.ts';

type Db = Kysely<MembersTables>;

/**
 * Accounts, memberships (the owner's from WorkspaceCreated, which predates accounts: its account
 * row is made from it when no AccountCreated came first), direct grants and open invitations.
 */
export const membersProjector = defineProjector<MembersTables>()({
  name: 'members',
  version: 1,
  tables: ['accounts', 'memberships', 'member_grants', 'invitations'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.accounts (
      user_id text PRIMARY KEY,
      email text NOT NULL,
      name text NOT NULL,
      image text,
      created_at timestamptz NOT NULL
    );
    CREATE TABLE IF NOT EXISTS ${s}.memberships (
      workspace_id text NOT NULL,
      user_id text NOT NULL,
      email text NOT NULL,
      is_owner boolean NOT NULL,
      rank integer NOT NULL,
      role_id text,
      created_at timestamptz NOT NULL,
      PRIMARY KEY (workspace_id, user_id)
    );
    CREATE INDEX IF NOT EXISTS memberships_order ON ${s}.memberships (workspace_id, rank, email, user_id);
    CREATE TABLE IF NOT EXISTS ${s}.member_grants (
      workspace_id text NOT NULL,
      user_id text NOT NULL,
      kind text NOT NULL,
      target_id text NOT NULL,
      access text NOT NULL,
      PRIMARY KEY (workspace_id, user_id, kind, target_id)
    );
    CREATE TABLE IF NOT EXISTS ${s}.invitations (
      id text PRIMARY KEY,
      workspace_id text NOT NULL,
      email text NOT NULL,
      role_id text NOT NULL,
      address_ids text[] NOT NULL,
      domain_ids text[] NOT NULL,
      access text NOT NULL,
      nonce text NOT NULL,
      invited_at timestamptz NOT NULL
    );
    CREATE INDEX IF NOT EXISTS invitations_workspace ON ${s}.invitations (workspace_id, role_id);`,
  on: {
    WorkspaceCreated: async (db, { data: d }) => {
      await db
        .insertInto('accounts')
        .values({
          user_id: d.ownerUserId,
          email: d.ownerEmail,
          name: d.ownerEmail.split('@')[0] ?? d.ownerEmail,
          image: null,
          created_at: d.createdAt,
        })
        .onConflict((oc) => oc.column('user_id').doNothing())
        .execute();
      await insertMembership(db, d.workspaceId, d.ownerUserId, d.ownerEmail, null, d.createdAt, true);
    },
    AccountCreated: async (db, { data: d }) => {
      await db
        .insertInto('accounts')
        .values({ user_id: d.userId, email: d.email, name: d.name, image: d.image, created_at: d.createdAt })
        .onConflict((oc) => oc.column('user_id').doUpdateSet({ email: d.email, name: d.name, image: d.image }))
        .execute();
    },
    MemberInvited: async (db, { metadata: { workspaceId }, data: d }) => {
      const row = {
        email: d.email,
        role_id: d.roleId,
        address_ids: d.addressIds,
        domain_ids: d.domainIds,
        access: d.access,
        nonce: d.nonce,
        invited_at: d.invitedAt,
      };
      await db
        .insertInto('invitations')
        .values({ id: d.invitationId, workspace_id: workspaceId, ...row })
        .onConflict((oc) => oc.column('id').doUpdateSet(row))
        .execute();
    },
    InvitationAccepted: async (db, { metadata: { workspaceId }, data: d }) => {
      await db.deleteFrom('invitations').where('id', '=', d.invitationId).execute();
      await insertMembership(db, workspaceId, d.userId, d.email, d.roleId, d.acceptedAt, false);
      const grants = [
        ...d.addressIds.map((id) => ({ kind: 'address' as const, target_id: id })),
        ...d.domainIds.map((id) => ({ kind: 'domain' as const, target_id: id })),
      ];
      if (grants.length === 0) return;
      await db
        .insertInto('member_grants')
        .values(grants.map((g) => ({ workspace_id: workspaceId, user_id: d.userId, access: d.access, ...g })))
        .onConflict((oc) => oc.columns(['workspace_id', 'user_id', 'kind', 'target_id']).doNothing())
        .execute();
    },
    MemberRoleChanged: async (db, { metadata: { workspaceId }, data: d }) => {
      await db
        .updateTable('memberships')
        .set({ role_id: d.roleId })
        .where('workspace_id', '=', workspaceId)
        .where('user_id', '=', d.userId)
        .execute();
    },
    MemberRemoved: async (db, { metadata: { workspaceId }, data: d }) => {
      for (const table of ['memberships', 'member_grants'] as const)
        await db.deleteFrom(table).where('workspace_id', '=', workspaceId).where('user_id', '=', d.userId).execute();
    },
    MemberAddressGranted: (db, e) =>
      grant(db, e.metadata.workspaceId, e.data.userId, 'address', e.data.addressId, e.data.access),
    MemberDomainGranted: (db, e) =>
      grant(db, e.metadata.workspaceId, e.data.userId, 'domain', e.data.domainId, e.data.access),
    MemberAddressRevoked: (db, e) => revoke(db, e.metadata.workspaceId, e.data.userId, 'address', e.data.addressId),
    MemberDomainRevoked: (db, e) => revoke(db, e.metadata.workspaceId, e.data.userId, 'domain', e.data.domainId),
    MemberRolesReassigned: reassign,
  },
});

async function insertMembership(
  db: Db,
  workspaceId: string,
  userId: string,
  email: string,
  roleId: string | null,
  at: string,
  isOwner: boolean,
): Promise<void> {
  await db
    .insertInto('memberships')
    .values({
      workspace_id: workspaceId,
      user_id: userId,
      email,
      is_owner: isOwner,
      rank: isOwner ? 0 : 1,
      role_id: roleId,
      created_at: at,
    })
    .onConflict((oc) => oc.columns(['workspace_id', 'user_id']).doNothing())
    .execute();
}

async function grant(
  db: Db,
  workspaceId: string,
  userId: string,
  kind: 'address' | 'domain',
  targetId: string,
  access: 'member' | 'viewer',
): Promise<void> {
  await db
    .insertInto('member_grants')
    .values({ workspace_id: workspaceId, user_id: userId, kind, target_id: targetId, access })
    .onConflict((oc) => oc.columns(['workspace_id', 'user_id', 'kind', 'target_id']).doUpdateSet({ access }))
    .execute();
}

async function revoke(db: Db, workspaceId: string, userId: string, kind: 'address' | 'domain', targetId: string) {
  await db
    .deleteFrom('member_grants')
    .where('workspace_id', '=', workspaceId)
    .where('user_id', '=', userId)
    .where('kind', '=', kind)
    .where('target_id', '=', targetId)
    .execute();
}

async function reassign(db: Db, { metadata: { workspaceId }, data: d }: Projected<'MemberRolesReassigned'>) {
  await db
    .updateTable('memberships')
    .set({ role_id: d.toRoleId })
    .where('workspace_id', '=', workspaceId)
    .where('role_id', '=', d.fromRoleId)
    .execute();
  await db
    .updateTable('invitations')
    .set({ role_id: d.toRoleId })
    .where('workspace_id', '=', workspaceId)
    .where('role_id', '=', d.fromRoleId)
    .execute();
}
