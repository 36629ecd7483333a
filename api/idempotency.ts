import crypto from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type pg from 'pg';
import { requestWrites, type RequestWrites } from '../commands/execute.ts';
import type { Credential } from './credential.ts';
import { ApiError } from './errors/api-error.ts';
import { errorBody, RETRY_AFTER_SECONDS, toApiError, unreachable } from './plugins/errors.ts';

/**
 * `Idempotency-Key` on every POST, and the answer of a write whose read models are late.
 *
 * A key is claimed per workspace and credential mode before the handler runs, with the request's
 * fingerprint (credential, method, URL, body); once the handler has answered, its status, headers
 * and body are stored under the key for 24 hours and a repeat of the same request gets them back
 * (`Idempotent-Replayed: true`). The same key with another request is 422
 * `idempotency_key_reuse`; while the first is still running a repeat waits for it (as long as a
 * write waits for its read models), then answers 409 `idempotency_key_in_use`. A refusal the
 * handler decided (4xx) is stored like a success; a failure (5xx) and a 429 free the key, so a
 * retry runs again (a 429 changed nothing and asks for exactly that retry, after Retry-After). The table keeps the SHA-256 of the key, and the answer encrypted with a key derived from
 * the Idempotency-Key itself: answers that carry a secret (a key's token, a webhook's secret)
 * are unreadable to anyone holding only the table.
 *
 * Every handler runs registered as a `RequestWrites` (commands/execute.ts): when its read models
 * pass their deadline, the request answers 503 `unreachable` at once, saying whether its change
 * is stored, and the handler goes on in the background until they catch up, then stores its
 * answer under the key, so a retry with the key gets the original answer, not a duplicate.
 */
export const IDEMPOTENCY_SCHEMA = `
CREATE TABLE IF NOT EXISTS idempotency_keys (
  workspace_id text NOT NULL,
  mode text NOT NULL,
  key_hash text NOT NULL,
  fingerprint text NOT NULL,
  request_id text NOT NULL,
  status integer,
  answer bytea,
  lease_until timestamptz,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (workspace_id, mode, key_hash)
);
CREATE INDEX IF NOT EXISTS idempotency_keys_created ON idempotency_keys (created_at);`;

const IDEMPOTENCY_KEY_PATTERN = /^[A-Za-z0-9_.:-]{1,255}$/;
export const IDEMPOTENCY_HEADER_DOC =
  'Up to 255 of letters, digits, `_ . : -`. The same request again under the same key answers the stored answer (`Idempotent-Replayed: true`) and changes nothing; another request under it is 422 `idempotency_key_reuse`. Keys are per workspace and mode, answered only to the credential that sent them, and kept 24 hours.';

/** How long a claim holds without a sign of life from its process, and how often that sign is given. */
const LEASE_MS = 30_000;
const HEARTBEAT_MS = 10_000;
const PURGE_EVERY_MS = 3_600_000;
const POLL_MS = 100;

/** The Idempotency-Key header, checked; null when absent. */
export function idempotencyKeyOf(headers: Record<string, unknown>): string | null {
  const raw = headers['idempotency-key'];
  if (raw === undefined) return null;
  if (typeof raw !== 'string' || !IDEMPOTENCY_KEY_PATTERN.test(raw)) {
    throw new ApiError(
      'invalid_idempotency_key',
      'An Idempotency-Key is 1 to 255 of letters, digits, `_`, `.`, `:` and `-`.',
      'Idempotency-Key',
      400,
    );
  }
  return raw;
}

interface Slot {
  workspaceId: string;
  mode: string;
  keyHash: string;
  /** AES-256-GCM key of the stored answer, derived from the Idempotency-Key. */
  secret: Buffer;
}

interface StoredAnswer {
  status: number;
  headers: Record<string, string>;
  /** The JSON body as sent; null for an empty one. */
  body: string | null;
}

type Claim = { kind: 'claimed' } | { kind: 'answered'; answer: StoredAnswer } | { kind: 'reused' } | { kind: 'busy' };

export class IdempotencyKeys {
  /** Claims of this process still running: their leases are renewed. */
  private readonly held = new Map<string, Slot & { requestId: string }>();
  private readonly background = new Set<Promise<void>>();
  private timer: NodeJS.Timeout | null = null;
  private purgedAt = 0;

  /** `waitMs`: how long a repeat waits for the first request under its key. */
  constructor(
    private readonly pool: pg.Pool,
    readonly waitMs: number,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.tick(), HEARTBEAT_MS);
    this.timer.unref();
  }

  /** Waits for answers still being finished in the background (they fail once the projections stop). */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await Promise.all([...this.background]);
  }

  slot(credential: Credential, key: string): Slot {
    const scope = `${credential.workspaceId}\n${credential.mode}`;
    return {
      workspaceId: credential.workspaceId,
      mode: credential.mode,
      keyHash: crypto.createHash('sha256').update(key).digest('hex'),
      secret: crypto.createHmac('sha256', key).update(`idempotent answer\n${scope}`).digest(),
    };
  }

  /** Takes the key for this request, or says what holds it: an answer, another request, one running. */
  async claim(slot: Slot, fingerprint: string, requestId: string): Promise<Claim> {
    const until = Date.now() + this.waitMs;
    for (;;) {
      // A key older than 24 hours is free again; so is one whose request died running (its lease ran out).
      const { rows } = await this.pool.query(
        `WITH claimed AS (
           INSERT INTO idempotency_keys (workspace_id, mode, key_hash, fingerprint, request_id, lease_until, created_at)
           VALUES ($1, $2, $3, $4, $5, now() + make_interval(secs => $6::double precision / 1000), now())
           ON CONFLICT (workspace_id, mode, key_hash) DO UPDATE SET
             fingerprint = EXCLUDED.fingerprint, request_id = EXCLUDED.request_id, status = NULL, answer = NULL,
             lease_until = EXCLUDED.lease_until, created_at = EXCLUDED.created_at
           WHERE idempotency_keys.created_at < now() - interval '24 hours'
              OR (idempotency_keys.status IS NULL AND idempotency_keys.lease_until < now() AND idempotency_keys.fingerprint = EXCLUDED.fingerprint)
           RETURNING true AS mine)
         SELECT c.mine, k.fingerprint, k.status, k.answer
         FROM (SELECT 1) one LEFT JOIN claimed c ON true
           LEFT JOIN idempotency_keys k ON k.workspace_id = $1 AND k.mode = $2 AND k.key_hash = $3`,
        [slot.workspaceId, slot.mode, slot.keyHash, fingerprint, requestId, LEASE_MS],
      );
      const row = rows[0];
      if (row.mine) {
        this.held.set(requestId, { ...slot, requestId });
        return { kind: 'claimed' };
      }
      if (row.fingerprint !== null && row.fingerprint !== fingerprint) return { kind: 'reused' };
      if (row.status !== null && row.answer !== null) return { kind: 'answered', answer: open(slot, row.answer) };
      if (Date.now() >= until) return { kind: 'busy' };
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  /** Stores the request's answer under its key, or frees the key (null) so that a retry runs again. */
  async settle(slot: Slot, requestId: string, answer: StoredAnswer | null): Promise<void> {
    this.held.delete(requestId);
    const where = 'workspace_id = $1 AND mode = $2 AND key_hash = $3 AND request_id = $4 AND status IS NULL';
    const key = [slot.workspaceId, slot.mode, slot.keyHash, requestId];
    try {
      if (answer === null) await this.pool.query(`DELETE FROM idempotency_keys WHERE ${where}`, key);
      else
        await this.pool.query(
          `UPDATE idempotency_keys SET status = $5, answer = $6, lease_until = NULL WHERE ${where}`,
          [...key, answer.status, seal(slot, answer)],
        );
    } catch (error) {
      // The answer still goes to the client; the claim's lease runs out and a retry runs again.
      console.error('idempotency key not settled:', error);
    }
  }

  /** Work that goes on after its request was answered; `close` waits for it. */
  finishInBackground(work: Promise<void>): void {
    const tracked = work
      .catch((error) => console.error('answer finished in the background:', error))
      .finally(() => this.background.delete(tracked));
    this.background.add(tracked);
  }

  private async tick(): Promise<void> {
    try {
      const held = [...this.held.values()];
      if (held.length > 0) {
        await this.pool.query(
          `UPDATE idempotency_keys k SET lease_until = now() + make_interval(secs => $5::double precision / 1000)
           FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS h(workspace_id, mode, key_hash, request_id)
           WHERE k.workspace_id = h.workspace_id AND k.mode = h.mode AND k.key_hash = h.key_hash AND k.request_id = h.request_id AND k.status IS NULL`,
          [
            held.map((h) => h.workspaceId),
            held.map((h) => h.mode),
            held.map((h) => h.keyHash),
            held.map((h) => h.requestId),
            LEASE_MS,
          ],
        );
      }
      if (Date.now() - this.purgedAt >= PURGE_EVERY_MS) {
        this.purgedAt = Date.now();
        await this.pool.query(`DELETE FROM idempotency_keys WHERE created_at < now() - interval '24 hours'`);
      }
    } catch (error) {
      console.error('idempotency keys:', error);
    }
  }
}

function seal(slot: Slot, answer: StoredAnswer): Buffer {
  const iv = crypto.randomBytes(12);
  const cipher = crypto.createCipheriv('aes-256-gcm', slot.secret, iv);
  const sealed = Buffer.concat([cipher.update(JSON.stringify(answer), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), sealed]);
}

function open(slot: Slot, stored: Buffer): StoredAnswer {
  const decipher = crypto.createDecipheriv('aes-256-gcm', slot.secret, stored.subarray(0, 12));
  decipher.setAuthTag(stored.subarray(12, 28));
  return JSON.parse(Buffer.concat([decipher.update(stored.subarray(28)), decipher.final()]).toString('utf8'));
}

/** The request as its caller sent it: who, what operation, on what, with what. */
function fingerprintOf(credential: Credential, request: FastifyRequest): string {
  const who = `${credential.kind}:${credential.id ?? credential.clientId ?? ''}`;
  return crypto
    .createHash('sha256')
    .update(JSON.stringify([who, request.method, request.url, bodyOf(request)]))
    .digest('hex');
}

/** An upload's bytes by their digest, with the headers that name and type them; a JSON body canonical. */
function bodyOf(request: FastifyRequest): unknown {
  if (!Buffer.isBuffer(request.body)) return canonical(request.body ?? null);
  const digest = crypto.createHash('sha256').update(request.body).digest('hex');
  return [digest, request.headers['x-filename'] ?? null, request.headers['content-type'] ?? null];
}

/** Object keys sorted, so the same body sent with its fields in another order is the same request. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

/** What a handler sets on its answer besides the body: kept apart from the reply, so an answer finished after its request was answered can still be stored. */
export interface AnswerHead {
  code(status: number): void;
  header(name: string, value: string): void;
}

export interface Answering {
  request: FastifyRequest;
  reply: FastifyReply;
  credential: Credential;
  /** The documented success status, unless the handler answers otherwise (201 new / 200 existing). */
  status: number;
  /** Does this operation take an Idempotency-Key here (POST, unless it keeps its own)? */
  idempotent: boolean;
}

/**
 * Runs a route's handler for its request: under its Idempotency-Key when the operation takes one,
 * and answering 503 `unreachable` when the read models pass their deadline (see the top of this file).
 */
export async function answer(
  keys: IdempotencyKeys,
  a: Answering,
  handler: (head: AnswerHead) => Promise<unknown>,
): Promise<unknown> {
  const { request, reply } = a;
  const key = a.idempotent ? idempotencyKeyOf(request.headers) : null;
  const slot = key === null ? null : keys.slot(a.credential, key);
  if (slot) {
    const claim = await keys.claim(slot, fingerprintOf(a.credential, request), request.id);
    if (claim.kind === 'answered') return replay(request, reply, claim.answer);
    if (claim.kind === 'reused') {
      throw new ApiError(
        'idempotency_key_reuse',
        'This Idempotency-Key was used for a different request (another operation, body or credential).',
        'Idempotency-Key',
        422,
      );
    }
    if (claim.kind === 'busy') {
      throw new ApiError(
        'idempotency_key_in_use',
        'A request with this Idempotency-Key is still being answered; retry shortly to get its answer.',
        'Idempotency-Key',
        409,
        {
          'Retry-After': String(RETRY_AFTER_SECONDS),
        },
      );
    }
  }
  const run = new HandlerRun(a.status);
  // While registered, the commands this request runs tell it when their read models are late.
  requestWrites.set(request.id, run);
  const work = handler(run).then(
    (result): Done => ({ ok: true, result }),
    (error: unknown): Done => ({ ok: false, error }),
  );
  void work.then((done) => {
    requestWrites.delete(request.id);
    run.end(done);
  });
  const first = await run.ending;
  if ('late' in first) {
    keys.finishInBackground(
      work.then((done) => (slot ? keys.settle(slot, request.id, storedAnswer(request, run, done)) : undefined)),
    );
    throw unreachable(lateMessage(first.late, slot !== null));
  }
  if (slot) await keys.settle(slot, request.id, storedAnswer(request, run, first));
  if (!first.ok) throw first.error;
  reply.code(run.status).headers(run.headers);
  return first.result === undefined ? reply.send() : first.result;
}

type Done = { ok: true; result: unknown } | { ok: false; error: unknown };

/**
 * One run of a handler: the status and headers it set, whether it stored a change, and how it
 * ended for its request: done, or late (its read models passed their deadline) while it goes on.
 * A class rather than closures: one is made per request.
 */
class HandlerRun implements AnswerHead, RequestWrites {
  stored = false;
  readonly headers: Record<string, string> = {};
  end!: (ending: Done | { late: boolean }) => void;
  readonly ending = new Promise<Done | { late: boolean }>((resolve) => (this.end = resolve));

  constructor(public status: number) {}

  code(status: number): void {
    this.status = status;
  }

  header(name: string, value: string): void {
    this.headers[name.toLowerCase()] = value;
  }

  readModelsLate(): boolean {
    this.end({ late: this.stored });
    return true;
  }
}

/** What a repeat under the key gets: the answer, or null (a failure) to free the key. */
function storedAnswer(request: FastifyRequest, run: HandlerRun, done: Done): StoredAnswer | null {
  if (done.ok)
    return {
      status: run.status,
      headers: run.headers,
      body: done.result === undefined ? null : JSON.stringify(done.result),
    };
  const refusal = toApiError(done.error);
  return refusal.status >= 500 || refusal.status === 429
    ? null
    : { status: refusal.status, headers: refusal.headers, body: JSON.stringify(errorBody(request, refusal)) };
}

function replay(request: FastifyRequest, reply: FastifyReply, stored: StoredAnswer): FastifyReply {
  if (stored.status >= 400 && stored.body)
    request.errorCode = (JSON.parse(stored.body) as { error: { code: string } }).error.code;
  reply.code(stored.status).headers(stored.headers).header('idempotent-replayed', 'true');
  return stored.body === null ? reply.send() : reply.type('application/json').send(stored.body);
}

function lateMessage(stored: boolean, keyed: boolean): string {
  const behind = "the service's read models have not caught up with it yet";
  if (!stored)
    return `The service's read models are behind, and this request has changed nothing yet. Retry shortly${keyed ? ' with the same Idempotency-Key' : ''}.`;
  if (keyed)
    return `The change was stored, but ${behind}. A retry with the same Idempotency-Key returns its answer once they have.`;
  return `The change was stored, but ${behind}: do not send it again as a new request; read it back shortly. (Send an Idempotency-Key to be able to retry a write safely.)`;
}
