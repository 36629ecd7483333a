import type { Kysely } from 'kysely';
import type { ReadModels } from '../tables.ts';

/** Explicit memberships per role id; the owner counts under the owner role. */
export async function countMembersByRole(
  db: Kysely<ReadModels>,
  workspaceId: string,
): Promise<{ byRole: Map<string, number>; owners: number }> {
  const rows = await db
    .selectFrom('members')
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
