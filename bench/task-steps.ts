import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { fileMessage } from '../commands/threads/handlers.ts';
import { createWorkspace } from '../commands/workspaces/handlers.ts';
import { mailboxLookups, openSystem, serve } from '../system.ts';
import { arrivingMessage } from '../test/support/inbound.ts';
import { emit, freshDatabase, note, round, Samples } from './support.ts';

/**
 * Our overhead per step of the tasks' assistant: one-off jobs (POST /task-jobs) worked by the
 * runner against a loopback chat-completions server that answers at once, each turn with one
 * scripted tool call (read_thread of a seeded thread and list_threads in turn), the last turn a
 * last word. A run is TASK_STEPS_TURNS turns (default 60, the most `maxSteps` allows).
 *
 * The figure is measured at the model server: from the moment it has sent a turn's answer to the
 * moment the same run's next request arrives. Between the two lies only our work: the client
 * reading the answer, the turn recorded, the tool call made and recorded, the AI action spent and
 * the conversation rebuilt from the run's stream and sent. Serially (TASK_STEPS_RUNS runs, default
 * 20, one after another: p50/p99 per step and steps/s), then the same runs all queued at once (the
 * runner works its `concurrency`, 4, at a time: steps/s of the service).
 *
 * The floor: the bare HTTP round trip to the same server (Node's fetch, nothing of ours between),
 * replaying the request bodies the serial runs sent, in order: the ratio is our overhead per step
 * over one round trip. The service runs in this process, as the model server does; a run is
 * sequential (model, us, model), so the two never work at once for one run.
 */
const RUNS = Number(process.env.TASK_STEPS_RUNS ?? 20);
const TURNS = Number(process.env.TASK_STEPS_TURNS ?? 60);
const THREADS = 10;

/** A message of a few paragraphs, so read_thread parses real mail. */
const rawMessage = (i: number) =>
  Buffer.from(
    `From: Ann <ann@outside.test>\r\nTo: desk@steps.example.com\r\nSubject: Order ${i}\r\n` +
      `Message-ID: <order-${i}@outside.test>\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n` +
      `${'Where is my order? It has not arrived, and the tracking page says nothing new. '.repeat(20)}\r\n`,
  );

interface ModelServer {
  baseUrl: string;
  /** Per run: the gap (ms) from each answer to the run's next request. */
  gaps: Samples;
  /** The request bodies seen, in order, while `recording`. */
  bodies: string[];
  recording: boolean;
  /** Runs that gave their last word. */
  finished: number;
  close(): Promise<void>;
}

/**
 * The chat-completions endpoint, scripted: a run is named by its instruction (`Run <n>.`), its
 * turn by the assistant messages so far. Answers at once; times stamped when a request's headers
 * have arrived and when its answer is written.
 */
async function startModelServer(threadIds: string[]): Promise<ModelServer> {
  const answeredAt = new Map<string, number>();
  const state: ModelServer = {
    baseUrl: '',
    gaps: new Samples(RUNS * TURNS),
    bodies: [],
    recording: false,
    finished: 0,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  let calls = 0;
  const server = http.createServer((req, res) => {
    const arrived = performance.now();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const body = JSON.parse(text) as { model: string; messages: { role: string; content: string | null }[] };
      const run = /Run (\d+)\./.exec(body.messages[1]?.content ?? '')?.[1];
      const turn = body.messages.filter((m) => m.role === 'assistant').length + 1;
      if (run === undefined) {
        // The floor's replay: the same answer a run's turn would get, nothing counted.
        res.writeHead(200, { 'content-type': 'application/json' }).end(answer(body.model, turn, calls++));
        return;
      }
      const last = answeredAt.get(run);
      if (last !== undefined) state.gaps.add(arrived - last);
      if (state.recording) state.bodies.push(text);
      res.writeHead(200, { 'content-type': 'application/json' }).end(answer(body.model, turn, calls++));
      answeredAt.set(run, performance.now());
      if (turn >= TURNS) {
        answeredAt.delete(run);
        state.finished++;
      }
    });
  });
  const answer = (model: string, turn: number, call: number) => {
    const tool =
      turn % 2 === 1
        ? { name: 'read_thread', arguments: JSON.stringify({ threadId: threadIds[turn % threadIds.length] }) }
        : { name: 'list_threads', arguments: '{}' };
    const message =
      turn >= TURNS
        ? { role: 'assistant', content: 'Read the orders; nothing to change.' }
        : {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: `call_${call}`, type: 'function', function: tool }],
          };
    return JSON.stringify({
      id: `chatcmpl-${call}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model,
      choices: [{ index: 0, message, finish_reason: turn >= TURNS ? 'stop' : 'tool_calls', logprobs: null }],
      usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 },
    });
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return state;
}

export async function taskStepsBench(): Promise<void> {
  const database = await freshDatabase('task_steps');
  const threadIds: string[] = [];
  const model = await startModelServer(threadIds);
  const system = await openSystem(database.url, {
    poolSize: 10,
    ai: {
      endpoint: { baseUrl: model.baseUrl, apiKey: 'sk-bench-loopback', model: 'bench-1', timeoutMs: 10_000 },
      dailyActions: 10_000_000,
    },
    tasks: { limits: { jobsPerDay: 1_000_000 }, runner: { pollMs: 20 } },
  });
  const app = await serve(system);
  try {
    const ws = await createWorkspace(system.commands, { name: 'Bench', ownerEmail: 'owner@bench.test' });
    const mailbox = {
      addressId: null,
      address: 'desk@steps.example.com',
      domainId: 'dom',
      domain: 'steps.example.com',
    };
    for (let i = 0; i < THREADS; i++) {
      const raw = rawMessage(i);
      const stored = await system.blobs.put(raw);
      const filed = await fileMessage(system.commands, mailboxLookups(system.readDb), ws.workspaceId, mailbox, {
        ...arrivingMessage(`order-${i}@outside.test`, {
          subject: `Order ${i}`,
          from: { name: 'Ann', address: 'ann@outside.test' },
          to: [{ name: null, address: mailbox.address }],
          snippet: 'Where is my order?',
          size: raw.length,
        }),
        mailFrom: 'ann@outside.test',
        rcptTo: [mailbox.address],
        raw: stored,
      });
      if (filed) threadIds.push(filed.threadId);
    }

    let started = 0;
    const start = async () => {
      const res = await app.inject({
        method: 'POST',
        url: '/task-jobs',
        headers: { authorization: `Bearer ${ws.apiKey}` },
        payload: { instruction: `Run ${started++}. Read the orders.`, toolkits: [], maxSteps: TURNS },
      });
      if (res.statusCode !== 202) throw new Error(`POST /task-jobs answered ${res.statusCode}: ${res.body}`);
    };
    const allFinished = async (runs: number) => {
      while (model.finished < runs) await new Promise((r) => setTimeout(r, 5));
      // The last word recorded: the run succeeded (its row done).
      for (;;) {
        const { rows } = await system.database.pool.query(
          "SELECT count(*)::int AS n FROM task_runs WHERE status IN ('queued', 'running')",
        );
        if (rows[0].n === 0) return;
        await new Promise((r) => setTimeout(r, 5));
      }
    };
    const stepsOf = async () =>
      Number((await system.database.pool.query('SELECT coalesce(sum(steps), 0) AS n FROM task_runs')).rows[0].n);
    const failed = async () =>
      Number(
        (await system.database.pool.query("SELECT count(*) AS n FROM task_runs WHERE status = 'failed'")).rows[0].n,
      );

    note(`task-steps: ${RUNS} runs of ${TURNS} turns, one after another`);
    model.recording = true;
    let steps0 = await stepsOf();
    let t0 = performance.now();
    for (let r = 0; r < RUNS; r++) {
      await start();
      await allFinished(r + 1);
    }
    const serialSeconds = (performance.now() - t0) / 1000;
    const serialSteps = (await stepsOf()) - steps0;
    model.recording = false;
    const serialGaps = model.gaps;
    const [p50, p99] = serialGaps.percentiles();

    note(`task-steps: the floor, ${model.bodies.length} request bodies replayed with fetch`);
    const floor = new Samples(model.bodies.length);
    for (const body of model.bodies) {
      // The run's name taken out, so the server answers it as the floor's.
      const bare = body.replace(/Run \d+\./, 'Floor.');
      await floor.time(async () => {
        const res = await fetch(`${model.baseUrl}/chat/completions`, {
          method: 'POST',
          headers: { authorization: 'Bearer sk-bench-loopback', 'content-type': 'application/json' },
          body: bare,
        });
        await res.json();
      });
    }
    const [f50, f99] = floor.percentiles();
    const bodyBytes = model.bodies.reduce((n, b) => n + Buffer.byteLength(b), 0) / Math.max(1, model.bodies.length);

    await emit({
      bench: 'task-steps.serial',
      runs: RUNS,
      turnsPerRun: TURNS,
      samples: serialGaps.length,
      overheadP50Ms: p50,
      overheadP99Ms: p99,
      stepsPerSecond: round(serialSteps / serialSeconds),
      turnsPerSecond: round((RUNS * TURNS) / serialSeconds),
      floorRoundTripP50Ms: f50,
      floorRoundTripP99Ms: f99,
      ratioP50: f50 ? round(p50! / f50, 1) : null,
      ratioP99: f99 ? round(p99! / f99, 1) : null,
      meanRequestBytes: Math.round(bodyBytes),
      failedRuns: await failed(),
    });

    note(`task-steps: ${RUNS} runs queued at once`);
    model.gaps = new Samples(RUNS * TURNS);
    steps0 = await stepsOf();
    const finished0 = model.finished;
    t0 = performance.now();
    for (let r = 0; r < RUNS; r++) await start();
    await allFinished(finished0 + RUNS);
    const concurrentSeconds = (performance.now() - t0) / 1000;
    const [c50, c99] = model.gaps.percentiles();
    await emit({
      bench: 'task-steps.concurrent',
      runs: RUNS,
      turnsPerRun: TURNS,
      samples: model.gaps.length,
      overheadP50Ms: c50,
      overheadP99Ms: c99,
      stepsPerSecond: round(((await stepsOf()) - steps0) / concurrentSeconds),
      turnsPerSecond: round((RUNS * TURNS) / concurrentSeconds),
      failedRuns: await failed(),
    });
  } finally {
    await app.close();
    await system.close();
    await model.close();
    await database.drop();
  }
}
