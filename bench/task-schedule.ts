import { createTask } from '../commands/tasks/handlers.ts';
import { createWorkspace } from '../commands/workspaces/handlers.ts';
import { EVERY_DAY } from '../domain/tasks/schedule.ts';
import { openSystem } from '../system.ts';
import { watchStatements } from './statements.ts';
import { emit, freshDatabase, msSince, note, round } from './support.ts';

/**
 * The task scheduler's cost per minute with TASK_SCHEDULE_TASKS (default 10,000) active tasks, in
 * 100 workspaces, each hourly at minute `i % 60`: every clock minute about a sixtieth of them fall
 * due, and each due schedule is one tick (its run queued as an event, projected, the row moved to
 * the next hour). Measured over whole clock minutes of the running service: ticks, the process's
 * CPU ms, and the time its queries took (every pg query of the process, summed from send to
 * answer), per minute. Then the same minutes with nothing due (every row moved a day on): the
 * whole service idle with its dispatchers. A tick's cost is the difference per minute over the
 * minute's ticks. The AI endpoint is configured but never called: a run only waits for the assistant.
 */
const TASKS = Number(process.env.TASK_SCHEDULE_TASKS ?? 10_000);
const WORKSPACES = 100;
const MINUTES = 2;

/**
 * Time spent in queries of this process: every pg client's `query` (watchStatements), whether it
 * is answered through a promise (kysely, our commands) or a callback (pg-pool's `pool.query`).
 */
let queryMs = 0;
let queries = 0;
function measureQueries(): void {
  watchStatements(() => {
    const started = process.hrtime.bigint();
    return () => {
      queries++;
      queryMs += msSince(started);
    };
  });
}

const untilNextMinute = () => new Promise((r) => setTimeout(r, 60_000 - (Date.now() % 60_000) + 200));

export async function taskScheduleBench(): Promise<void> {
  measureQueries();
  const database = await freshDatabase('task_schedule');
  const system = await openSystem(database.url, {
    poolSize: 10,
    ai: { endpoint: { baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-never-called', model: 'none', timeoutMs: 1000 } },
    tasks: { limits: { tasks: TASKS / WORKSPACES, active: TASKS / WORKSPACES } },
  });
  try {
    note(`task-schedule: seeding ${TASKS} hourly tasks in ${WORKSPACES} workspaces`);
    const seedStarted = process.hrtime.bigint();
    await Promise.all(
      Array.from({ length: WORKSPACES }, async (_, w) => {
        const ws = await createWorkspace(system.commands, { name: `Bench ${w}`, ownerEmail: `o${w}@bench.test` });
        const actor = { workspaceId: ws.workspaceId, kind: 'system' as const, id: null };
        for (let i = 0; i < TASKS / WORKSPACES; i++)
          await createTask(
            system.commands,
            actor,
            {
              owner: { kind: 'apiKey', id: null },
              paused: false,
              limits: system.tasks.limits,
              settings: {
                name: `Task ${i}`,
                instruction: 'Summarise the new mail.',
                trigger: {
                  kind: 'schedule',
                  cadence: 'hourly',
                  everyHours: 1,
                  hour: 0,
                  minute: (w * (TASKS / WORKSPACES) + i) % 60,
                  weekdays: EVERY_DAY,
                  monthDay: 1,
                  timezone: 'Europe/Berlin',
                },
                autonomy: 'organize',
                toolkits: ['drafts'],
                model: 'standard',
                notify: 'attention',
                maxRunsPerDay: 50,
                maxSteps: 20,
              },
            },
            new Date().toISOString(),
          );
      }),
    );
    const seedSeconds = msSince(seedStarted) / 1000;
    note(`task-schedule: seeded in ${round(seedSeconds)} s`);
    const pool = system.database.pool;
    const runs = async () => Number((await pool.query('SELECT count(*) AS n FROM task_runs')).rows[0].n);

    const measure = async () => {
      await untilNextMinute();
      const cpu0 = process.cpuUsage();
      const q0 = queryMs;
      const n0 = queries;
      const r0 = await runs();
      const started = process.hrtime.bigint();
      for (let m = 0; m < MINUTES; m++) await untilNextMinute();
      // The last minute's ticks finish within a second or two of it.
      await new Promise((r) => setTimeout(r, 3000));
      const cpu = process.cpuUsage(cpu0);
      const minutes = msSince(started) / 60_000;
      return {
        minutes: round(minutes, 2),
        ticksPerMinute: round(((await runs()) - r0) / minutes),
        cpuMsPerMinute: round((cpu.user + cpu.system) / 1000 / minutes),
        dbMsPerMinute: round((queryMs - q0) / minutes),
        queriesPerMinute: round((queries - n0) / minutes),
      };
    };
    // The seed's events are projected, and the slots that fell due while seeding ticked, before measuring.
    await untilNextMinute();
    note(`task-schedule: ${MINUTES} clock minutes with a sixtieth of the tasks due each`);
    const due = await measure();
    await pool.query("UPDATE task_schedules SET next_run_at = next_run_at + interval '1 day', seq = seq + 1");
    note(`task-schedule: ${MINUTES} clock minutes with nothing due`);
    const idle = await measure();
    // What a tick adds to the idle service: the difference per minute, over the ticks of a minute.
    const perTick = (field: 'cpuMsPerMinute' | 'dbMsPerMinute') =>
      due.ticksPerMinute > 0 ? round((due[field] - idle[field]) / due.ticksPerMinute, 2) : null;
    await emit({
      bench: 'task-schedule.due',
      tasks: TASKS,
      ...due,
      cpuMsPerTick: perTick('cpuMsPerMinute'),
      dbMsPerTick: perTick('dbMsPerMinute'),
      seedSeconds: round(seedSeconds),
    });
    await emit({ bench: 'task-schedule.idle', tasks: TASKS, ...idle });
  } finally {
    await system.close();
    await database.drop();
  }
}
