import type pg from 'pg';
import type { CommandContext } from '../../commands/execute.ts';
import { pauseTasksBeyondPlan } from '../../commands/tasks/handlers.ts';
import type { TaskCountLimits } from '../../domain/tasks/decide.ts';

/**
 * The plan no longer covers every active task (its active limit, `TASKS_ACTIVE_MAX`, was lowered
 * and the service started again): each workspace past it has its newest active tasks paused with
 * `plan_limit`. Run once at start, as the limit only changes with the configuration; the
 * scheduler's table (schedule.ts) says which workspaces are past it. Answers the tasks paused.
 */
export async function pauseTasksPastPlan(
  pool: pg.Pool,
  commands: CommandContext,
  limits: TaskCountLimits,
): Promise<number> {
  const { rows } = await pool.query<{ workspace_id: string }>(
    'SELECT workspace_id FROM task_schedules WHERE active GROUP BY workspace_id HAVING count(*) > $1',
    [limits.active],
  );
  let paused = 0;
  for (const { workspace_id } of rows)
    paused += await pauseTasksBeyondPlan(commands, workspace_id, limits, new Date().toISOString());
  return paused;
}
