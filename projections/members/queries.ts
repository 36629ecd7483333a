import { sql, type Kysely, type Selectable } from 'kysely';
import type { ReadModels } from '../tables.ts';
import type { MembersTables } from './tables.ts';

type Db = Kysely<ReadModels>;

export type InvitationRow = Selectable<MembersTables['invitations']>;

/** A membership with its person and role; grants come separately (`grantsOf`). */
export interface MemberRow {
  user_id: string;
  email: string;
  name: string | null;
  image: string | null;
  is_owner: boolean;
  rank: number;
  role_id: string | null;
  role_name: string | null;
  role_builtin: string | null;
  role_permissions: string[] | null;
  created_at: Date;
}

export interface GrantRow {
  user_id: string;
  kind: 'address' | 'domain';
  target_id: string;
  access: 'member' | 'viewer';
  /** The address or domain name; null when it has gone since. */
  label: string | null;
}

/** The list's sort key: the owner first, then by email, then user id. */
export type MemberCursor = [number, string, string];
export const memberCursorOf = (m: MemberRow): MemberCursor => [m.rank, m.email, m.user_id];

const members = (db: Db, workspaceId: string) =>
  db
    .selectFrom('memberships as m')
    .leftJoin('accounts as a', 'a.user_id', 'm.user_id')
    .leftJoin('roles as r', (j) => j.onRef('r.id', '=', 'm.role_id').onRef('r.workspace_id', '=', 'm.workspace_id'))
    .select([
      'm.user_id',
      'm.email',
      'a.name',
      'a.image',
      'm.is_owner',
      'm.rank',
      'm.role_id',
      'r.name as role_name',
      'r.builtin as role_builtin',
      'r.permissions as role_permissions',
      'm.created_at',
    ])
    .where('m.workspace_id', '=', workspaceId);

export async function findMember(db: Db, workspaceId: string, userId: string): Promise<MemberRow | undefined> {
  return members(db, workspaceId).where('m.user_id', '=', userId).executeTakeFirst();
}

export async function listMembers(
  db: Db,
  workspaceId: string,
  limit: number,
  after: MemberCursor | null,
): Promise<MemberRow[]> {
  let q = members(db, workspaceId);
  if (after) {
    const [rank, email, userId] = after;
    q = q.where((eb) =>
      eb.or([
        eb('m.rank', '>', rank),
        eb.and([eb('m.rank', '=', rank), eb('m.email', '>', email)]),
        eb.and([eb('m.rank', '=', rank), eb('m.email', '=', email), eb('m.user_id', '>', userId)]),
      ]),
    );
  }
  return q
    .orderBy('m.rank')
    .orderBy('m.email')
    .orderBy('m.user_id')
    .limit(limit + 1)
    .execute();
}

/** The direct grants of some members, with the names of what they grant. */
export async function grantsOf(db: Db, workspaceId: string, userIds: string[]): Promise<GrantRow[]> {
  if (userIds.length === 0) return [];
  return (
    db
      .selectFrom('member_grants as g')
      .leftJoin('addresses as ad', (j) =>
        j
          .onRef('ad.id', '=', 'g.target_id')
          .onRef('ad.workspace_id', '=', 'g.workspace_id')
          .on('g.kind', '=', 'address'),
      )
      // Domain ids are uuids; grants keep every target as text.
      .leftJoin('domains as d', (j) =>
        j
          .on((eb) => eb(sql`d.id::text`, '=', eb.ref('g.target_id')))
          .onRef('d.workspace_id', '=', 'g.workspace_id')
          .on('g.kind', '=', 'domain'),
      )
      .select([
        'g.user_id',
        'g.kind',
        'g.target_id',
        'g.access',
        (eb) => eb.fn.coalesce('ad.address', 'd.domain').as('label'),
      ])
      .where('g.workspace_id', '=', workspaceId)
      .where('g.user_id', 'in', userIds)
      .orderBy('g.kind')
      .orderBy('label')
      .execute()
  );
}

/** Explicit memberships per role id; the owner counts under the owner role. */
export async function countMembersByRole(
  db: Db,
  workspaceId: string,
): Promise<{ byRole: Map<string, number>; owners: number }> {
  const rows = await db
    .selectFrom('memberships')
    .select(['role_id', 'is_owner', (eb) => eb.fn.countAll<number>().as('n')])
    .where('workspace_id', '=', workspaceId)
    .groupBy(['role_id', 'is_owner'])
    .execute();
  const byRole = new Map<string, number>();
  let owners = 0;
  for (const r of rows) {
    if (r.is_owner) owners += Number(r.n);
    else if (r.role_id) byRole.set(r.role_id, (byRole.get(r.role_id) ?? 0) + Number(r.n));
  }
  return { byRole, owners };
}

/** Invitations under a role (expired ones included: a refresh would revive them under it). */
export async function countInvitationsWithRole(db: Db, workspaceId: string, roleId: string): Promise<number> {
  const row = await db
    .selectFrom('invitations')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('workspace_id', '=', workspaceId)
    .where('role_id', '=', roleId)
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** An invitation by id in any workspace: the acceptance page knows only its link. */
export async function findInvitationAnywhere(db: Db, invitationId: string): Promise<InvitationRow | undefined> {
  return db.selectFrom('invitations').selectAll().where('id', '=', invitationId).executeTakeFirst();
}

export async function findInvitation(
  db: Db,
  workspaceId: string,
  invitationId: string,
): Promise<InvitationRow | undefined> {
  return db
    .selectFrom('invitations')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', invitationId)
    .executeTakeFirst();
}
