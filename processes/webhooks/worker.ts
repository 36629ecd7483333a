import type http from 'node:http';
import type https from 'node:https';
import type pg from 'pg';
import { execute, type CommandContext } from '../../commands/execute.ts';
import { decideAutoDisableWebhookEndpoint, FAILURES_TO_DISABLE } from '../../domain/webhooks/decide.ts';
import { webhooksStream } from '../../domain/webhooks/events.ts';
import { webhooksAggregate } from '../../domain/webhooks/state.ts';
import type { Delivery as Job, JobOutcome, WorkQueue } from '../../infra/bus/port.ts';
import { postJson, type PostResult } from '../../infra/http/post.ts';
import { DueWork, type DueWakeups } from '../due-work.ts';
import { Repeating } from '../repeating.ts';
import { signatureHeader } from './signing.ts';

/** Standard Webhooks' schedule after the first attempt: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (8 attempts in all). */
export const DEFAULT_RETRY_SCHEDULE_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];

export interface WebhookDeliveryOptions {
  /** The bus queue of delivery jobs; one per database (jobs name rows of it). */
  queue: string;
  /** Delay before attempt n + 2 after attempt n + 1 failed; when used up, the delivery has failed. */
  retryScheduleMs: number[];
  /** Deadline of one POST, connection to last byte read. */
  timeoutMs: number;
  /**
   * A job enqueued this long ago without an outcome is enqueued again (lost by the bus, or its
   * worker died); a switch-off owed by the failure count but not written is written again as often.
   */
  staleAfterMs: number;
  pollMs: number;
  /** The longest the dispatcher goes without looking for deliveries another process wrote; DueWork's 1 s when absent. */
  idleMs?: number;
  concurrency: number;
}

export const DEFAULT_DELIVERY_OPTIONS: WebhookDeliveryOptions = {
  queue: 'webhook-deliveries',
  retryScheduleMs: DEFAULT_RETRY_SCHEDULE_MS,
  timeoutMs: 10_000,
  staleAfterMs: 60_000,
  pollMs: 50,
  concurrency: 32,
};

/** Retry-After is honoured within these bounds, so a receiver can slow us down but not park a delivery for ever. */
const RETRY_AFTER_MAX_MS = 24 * 60 * 60 * 1000;

interface Due {
  id: string;
  attempts: number;
}

interface Target {
  id: string;
  workspace_id: string;
  endpoint_id: string;
  message_id: string;
  payload: unknown;
  status: string;
  attempts: number;
  url: string | null;
  enabled: boolean | null;
  secret: string | null;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
}

export interface WebhookDeliveryDeps {
  pool: pg.Pool;
  bus: WorkQueue;
  wakeups: DueWakeups;
  commands: CommandContext;
  agents: { http: http.Agent; https: https.Agent };
}

/**
 * The sending half of webhook delivery. A dispatcher loop claims due pending deliveries (made by
 * dispatch.ts from the event log) and publishes one job each on the bus; workers POST them signed,
 * record the attempt, schedule the retry or settle the delivery, count the endpoint's consecutive
 * failures, and switch the endpoint off at 100 failures or on a 410. The database says what is
 * due, so a job the bus loses, or a worker killed mid-delivery, is enqueued again after
 * `staleAfterMs`, and on start everything pending and due is enqueued at once. The notice mail
 * reacts to the switch-off event (notices.ts).
 */
export class WebhookDeliveryProcess {
  private readonly work: DueWork<Due>;
  private readonly sweep: Repeating;

  constructor(
    private readonly deps: WebhookDeliveryDeps,
    private readonly options: WebhookDeliveryOptions = DEFAULT_DELIVERY_OPTIONS,
  ) {
    // Each due delivery is claimed for its next attempt: the attempt is counted here, so a worker only reads.
    this.work = new DueWork<Due>(
      deps,
      options.queue,
      { pollMs: options.pollMs, staleAfterMs: options.staleAfterMs, idleMs: options.idleMs, label: 'webhook' },
      {
        table: 'webhook_deliveries',
        key: 'id',
        waiting: "status = 'pending'",
        when: 'next_attempt_at',
        order: 'next_attempt_at',
        set: 'attempts = r.attempts + 1, last_attempt_at = now()',
        returning: 'r.id, r.attempts',
      },
      (d) => ({ id: `${d.id}.${d.attempts}`, payload: { deliveryId: d.id, attempts: d.attempts } }),
    );
    this.sweep = new Repeating('webhook switch-off', () => this.switchOffOwed(), options.staleAfterMs);
  }

  async start(): Promise<void> {
    await this.work.start((job) => this.handle(job), {
      concurrency: this.options.concurrency,
      onError: (error) => console.error('webhook delivery:', error),
    });
    this.sweep.start();
  }

  async stop(): Promise<void> {
    await this.sweep.stop();
    await this.work.stop();
  }

  /**
   * The count is committed before the switch-off is appended, so a failed append or a crash in
   * between leaves an endpoint with 100 failures that the log still calls enabled; its deliveries
   * are then refused uncounted and nothing else would ever write the switch-off. Every
   * `staleAfterMs` (and on start) such endpoints are switched off again; the decider writes
   * nothing for one that is off already. The routes say enabled until the switch-off is projected.
   */
  private async switchOffOwed(): Promise<number> {
    const { rows } = await this.deps.pool.query<{ workspace_id: string; id: string }>(
      `SELECT r.workspace_id, r.id FROM webhook_health h JOIN webhook_routes r ON r.id = h.endpoint_id
       WHERE r.enabled AND h.consecutive_failures >= $1`,
      [FAILURES_TO_DISABLE],
    );
    for (const r of rows) {
      await this.switchOff(r.workspace_id, r.id, 'consecutive_failures').catch((error) =>
        console.error('webhook switch-off:', error),
      );
    }
    return this.options.staleAfterMs;
  }

  private async handle(job: Job): Promise<JobOutcome> {
    const { deliveryId, attempts } = job.payload as { deliveryId: string; attempts: number };
    // Only the attempt the job was made for, while it is on the bus: settling clears `enqueued_at`,
    // so a duplicate of a settled job finds nothing to do.
    const { rows } = await this.deps.pool.query<Target>(
      `SELECT d.id, d.workspace_id, d.endpoint_id, d.message_id, d.payload, d.status, d.attempts,
              e.url, e.enabled AND coalesce(h.consecutive_failures, 0) < $3 AS enabled,
              e.secret, e.previous_secret, e.previous_secret_expires_at
       FROM webhook_deliveries d LEFT JOIN webhook_endpoints e ON e.id = d.endpoint_id LEFT JOIN webhook_health h ON h.endpoint_id = d.endpoint_id
       WHERE d.id = $1 AND d.status = 'pending' AND d.attempts = $2 AND d.enqueued_at IS NOT NULL`,
      [deliveryId, attempts, FAILURES_TO_DISABLE],
    );
    const target = rows[0];
    if (!target) return { ack: true };
    if (!target.url || !target.enabled) {
      await this.settle(
        target,
        {
          ok: false,
          status: null,
          durationMs: 0,
          error: target.url ? 'endpoint disabled' : 'endpoint deleted',
          excerpt: null,
        },
        null,
      );
      return { ack: true };
    }
    const body = JSON.stringify(target.payload);
    const timestamp = Math.floor(Date.now() / 1000);
    const secrets = [target.secret!];
    if (
      target.previous_secret &&
      target.previous_secret_expires_at &&
      target.previous_secret_expires_at.getTime() > Date.now()
    ) {
      secrets.push(target.previous_secret);
    }
    let result: PostResult | null = null;
    let error: string | null = null;
    const started = Date.now();
    try {
      result = await postJson(new URL(target.url), {
        body,
        timeoutMs: this.options.timeoutMs,
        agents: this.deps.agents,
        headers: {
          'user-agent': 'workspace-mail-service-webhooks/1',
          'webhook-id': target.message_id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signatureHeader(secrets, target.message_id, timestamp, body),
        },
      });
    } catch (e) {
      const err = e as { code?: string; message?: string };
      error = err.code ? `${err.code}: ${err.message ?? ''}`.slice(0, 300) : String(err.message ?? e).slice(0, 300);
    }
    const ok = result !== null && result.status >= 200 && result.status < 300;
    await this.settle(
      target,
      {
        ok,
        status: result?.status ?? null,
        durationMs: result?.durationMs ?? Date.now() - started,
        error,
        excerpt: result?.excerpt ?? null,
      },
      result?.retryAfter ?? null,
    );
    return { ack: true };
  }

  /** Records the attempt, moves the delivery on, counts the endpoint's failures. */
  private async settle(
    t: Target,
    a: { ok: boolean; status: number | null; durationMs: number; error: string | null; excerpt: string | null },
    retryAfter: string | null,
  ): Promise<void> {
    const counted = Boolean(t.url && t.enabled);
    // The schedule's delay; whether the endpoint is switched off by this very failure is decided in SQL.
    const retryInMs = a.ok || !t.enabled || a.status === 410 ? null : this.retryDelay(t.attempts, retryAfter);
    // One statement, so one round trip: the attempt, the endpoint's count, the delivery's next step.
    // The count stops at 100: attempts already in flight when it got there fail uncounted.
    const { rows } = await this.deps.pool.query<{ failures: number | null }>(
      `WITH attempt AS (
         INSERT INTO webhook_attempts (delivery_id, attempt, endpoint_id, ok, status_code, duration_ms, error, response_excerpt, at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now()) ON CONFLICT DO NOTHING),
       health AS (
         INSERT INTO webhook_health (endpoint_id, consecutive_failures, last_delivery_at)
         SELECT $3, CASE WHEN $4 THEN 0 ELSE 1 END, now() WHERE $9
         ON CONFLICT (endpoint_id) DO UPDATE SET last_delivery_at = now(),
           consecutive_failures = CASE WHEN $4 THEN 0 ELSE least(webhook_health.consecutive_failures + 1, $11) END
         RETURNING consecutive_failures),
       next AS (
         SELECT CASE WHEN $4 THEN 'delivered'
                     WHEN $10::double precision IS NULL OR coalesce((SELECT consecutive_failures FROM health), 0) >= $11 THEN 'failed'
                     ELSE 'pending' END AS status)
       UPDATE webhook_deliveries SET last_status_code = $5, enqueued_at = NULL, status = next.status,
         next_attempt_at = CASE WHEN next.status = 'pending' THEN now() + make_interval(secs => $10 / 1000) ELSE next_attempt_at END,
         completed_at = CASE WHEN next.status = 'pending' THEN NULL ELSE now() END
       FROM next WHERE id = $1
       RETURNING (SELECT consecutive_failures FROM health) AS failures`,
      [
        t.id,
        t.attempts,
        t.endpoint_id,
        a.ok,
        a.status,
        a.durationMs,
        a.error,
        a.excerpt,
        counted,
        retryInMs,
        FAILURES_TO_DISABLE,
      ],
    );
    const failures = rows[0]?.failures ?? 0;
    if (!a.ok && t.url && t.enabled) {
      if (a.status === 410) await this.switchOff(t.workspace_id, t.endpoint_id, 'gone');
      else if (failures >= FAILURES_TO_DISABLE)
        await this.switchOff(t.workspace_id, t.endpoint_id, 'consecutive_failures');
    }
  }

  /** The schedule's delay, or a longer Retry-After; null when the schedule is used up. */
  private retryDelay(attempt: number, retryAfter: string | null): number | null {
    const scheduled = this.options.retryScheduleMs[attempt - 1];
    if (scheduled === undefined) return null;
    let asked = 0;
    if (retryAfter !== null) {
      const seconds = Number(retryAfter);
      asked = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(retryAfter) - Date.now();
    }
    return Math.min(RETRY_AFTER_MAX_MS, Math.max(scheduled, Number.isFinite(asked) ? asked : 0));
  }

  private async switchOff(workspaceId: string, endpointId: string, reason: string): Promise<void> {
    const actor = { workspaceId, kind: 'system' as const, id: null };
    await execute(this.deps.commands, actor, webhooksStream(workspaceId), webhooksAggregate, (s) =>
      decideAutoDisableWebhookEndpoint(s, { endpointId, reason, now: new Date().toISOString() }),
    );
  }
}
