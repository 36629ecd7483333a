import { createAudience } from '../commands/audiences/handlers.ts';
import { createTemplate } from '../commands/templates/handlers.ts';
import { createWorkspace } from '../commands/workspaces/handlers.ts';
import { EMPTY_DOCUMENT } from '../domain/templates/decide.ts';
import type { TemplateContent } from '../domain/templates/events.ts';
import { openSystem, type System } from '../system.ts';
import { emit, freshDatabase, msSince, note, round, Samples } from './support.ts';

/**
 * Creates of different things held by one stream per workspace (the template registry, the
 * audiences), all at once: how long the burst takes, each create's latency, and how many fail.
 * `systems` > 1 opens that many systems on one database, each with its own event store, the way
 * several server processes contend for a stream.
 */
const RUNS: { kind: 'templates' | 'audiences'; creates: number; systems: number }[] = [
  { kind: 'templates', creates: 40, systems: 1 },
  { kind: 'templates', creates: 190, systems: 1 },
  { kind: 'templates', creates: 190, systems: 3 },
  { kind: 'audiences', creates: 95, systems: 1 },
];

const BLANK: TemplateContent = {
  engine: 'blocks',
  subject: '',
  document: EMPTY_DOCUMENT,
  html: null,
  slots: [],
  props: [],
};

/** Small pools: the PostgreSQL the benchmarks share takes 100 connections in all. */
const POOL_SIZE = 5;

export async function contentionBench(): Promise<void> {
  const database = await freshDatabase('contention');
  const systems: System[] = [];
  try {
    for (let i = 0; i < Math.max(...RUNS.map((r) => r.systems)); i++)
      systems.push(await openSystem(database.url, { project: i === 0, poolSize: POOL_SIZE }));
    for (const run of RUNS) {
      const ws = await createWorkspace(systems[0]!.commands, {
        name: 'Bench contention',
        ownerEmail: 'owner@bench.test',
      });
      const actor = { workspaceId: ws.workspaceId, kind: 'system' as const, id: null };
      const samples = new Samples(run.creates);
      const failures = new Map<string, number>();
      note(`contention: ${run.creates} concurrent ${run.kind} creates in one workspace over ${run.systems} system(s)`);
      const started = process.hrtime.bigint();
      await Promise.all(
        Array.from({ length: run.creates }, async (_, i) => {
          const ctx = systems[i % run.systems]!.commands;
          const now = new Date().toISOString();
          const t0 = process.hrtime.bigint();
          try {
            if (run.kind === 'templates') {
              await createTemplate(
                ctx,
                actor,
                { name: `Template ${i}`, slug: null, description: null, starter: null, content: BLANK, publish: false },
                now,
              );
            } else {
              await createAudience(
                ctx,
                actor,
                { name: `Audience ${i}`, description: null, showOnPreferences: false },
                now,
              );
            }
          } catch (error) {
            const name = String((error as { code?: string }).code ?? (error as Error).name);
            failures.set(name, (failures.get(name) ?? 0) + 1);
          }
          samples.add(msSince(t0));
        }),
      );
      const seconds = msSince(started) / 1000;
      const [p50, p99] = samples.percentiles();
      await emit({
        bench: 'contention.creates',
        kind: run.kind,
        creates: run.creates,
        systems: run.systems,
        failed: Object.fromEntries(failures),
        createsPerSec: round(run.creates / seconds),
        p50Ms: p50!,
        p99Ms: p99!,
        seconds: round(seconds, 2),
      });
    }
  } finally {
    for (const s of systems.reverse()) await s.close();
    await database.drop();
  }
}
