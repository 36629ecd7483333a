/**
 * The floor the HTTP benchmarks measure the service against: bare Fastify and pg, in a process of
 * its own like bench/server.ts, making the round trips a request cannot do without and nothing
 * else. Every request: the bearer token split and its secret hashed, then one statement that reads
 * the key and counts the request in its minute (as the service's admission does, under identities
 * of its own so it spends none of the service's allowance). Then
 *   GET  /suppressions?limit=  one page of the workspace's suppressions, newest first;
 *   POST /suppressions         one statement (one transaction, one commit) writing the event row
 *                              and the read-model row, into copies of `es_events` and `suppressions`
 *                              with the same keys and indexes;
 *   POST /emails               one statement that reads the sending address and the recipient's
 *                              suppression and writes the event row (the message in it) and a row
 *                              of the message's own, when the address is the workspace's and the
 *                              recipient not suppressed.
 * No validation, idempotency, request log, cursors or read-your-writes wait: a floor, not a service.
 * Forked by bench/support.ts (startServer with this script), with the messages of bench/child.ts.
 */
import crypto from 'node:crypto';
import Fastify from 'fastify';
import pg from 'pg';
import { runBenchServer } from './child.ts';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS floor_events (
  position bigserial PRIMARY KEY,
  stream_id text NOT NULL,
  revision integer NOT NULL,
  type text NOT NULL,
  version integer NOT NULL,
  data jsonb NOT NULL,
  metadata jsonb NOT NULL,
  recorded_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (stream_id, revision)
);
CREATE TABLE IF NOT EXISTS floor_suppressions (LIKE suppressions INCLUDING ALL);
CREATE TABLE IF NOT EXISTS floor_emails (
  id text PRIMARY KEY,
  workspace_id text NOT NULL,
  from_address_id text NOT NULL,
  to_email text NOT NULL,
  subject text NOT NULL,
  status text NOT NULL,
  created_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS floor_emails_list ON floor_emails (workspace_id, created_at DESC, id DESC);`;

const ADMIT = `
WITH key AS (
  SELECT id, workspace_id, scopes FROM api_keys
  WHERE id = $1 AND secret_hash = $2 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())
), hit AS (
  INSERT INTO rate_limit_windows (identity, window_start, count)
  SELECT 'floor:' || coalesce((SELECT id FROM key), $3), $4, 1
  ON CONFLICT (identity, window_start) DO UPDATE SET count = rate_limit_windows.count + 1
  RETURNING count
)
SELECT hit.count, key.* FROM hit LEFT JOIN key ON true`;

const PAGE = `
SELECT id, email, reason, detail, removable, created_at FROM suppressions
WHERE workspace_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2`;

const ADD = `
WITH event AS (
  INSERT INTO floor_events (stream_id, revision, type, version, data, metadata)
  VALUES ('ws-' || $1 || '.suppression-' || $3, 0, 'SuppressionAdded', 1,
          jsonb_build_object('suppressionId', $2::text, 'email', $3::text, 'reason', 'manual', 'detail', null,
                             'removable', true, 'createdAt', $4::text),
          jsonb_build_object('workspaceId', $1::text, 'requestId', $5::text))
)
INSERT INTO floor_suppressions (workspace_id, id, email, reason, detail, removable, created_at)
VALUES ($1, $2::uuid, $3, 'manual', null, true, $4::timestamptz)`;

const SEND = `
WITH sender AS (
  SELECT id FROM addresses WHERE workspace_id = $1 AND address = $2 AND enabled AND registered
), allowed AS (
  SELECT sender.id FROM sender
  WHERE NOT EXISTS (SELECT 1 FROM suppressions WHERE workspace_id = $1 AND email = $3)
), event AS (
  INSERT INTO floor_events (stream_id, revision, type, version, data, metadata)
  SELECT 'ws-' || $1 || '.email-' || $4, 0, 'EmailAccepted', 1, $6::jsonb, jsonb_build_object('workspaceId', $1::text)
  FROM allowed
)
INSERT INTO floor_emails (workspace_id, id, from_address_id, to_email, subject, status, created_at)
SELECT $1, $4, allowed.id, $3, $5, 'queued', now() FROM allowed
RETURNING id`;

runBenchServer(async () => {
  const [url] = process.argv.slice(2);
  const pool = new pg.Pool({ connectionString: url, max: 20 });
  await pool.query(SCHEMA);
  const app = Fastify();
  const minute = () => Math.floor(Date.now() / 60_000) * 60_000;

  const admit = async (authorization: string | undefined, ip: string) => {
    // The service's tokens: wms_<mode>_<key id>_<secret>; the secret is stored as its SHA-256.
    const [, keyId, secret] = /^Bearer wms_(?:live|test)_([0-9a-z]{24})_(\S{43})$/.exec(authorization ?? '') ?? [];
    const { rows } = await pool.query({
      name: 'floor-admit',
      text: ADMIT,
      values: [
        keyId ?? null,
        crypto
          .createHash('sha256')
          .update(secret ?? '')
          .digest('hex'),
        `ip:${ip}`,
        minute(),
      ],
    });
    return rows[0] as { count: number; id: string | null; workspace_id: string };
  };

  app.get<{ Querystring: { limit?: string } }>('/suppressions', async (request, reply) => {
    const key = await admit(request.headers.authorization, request.ip);
    if (key.id === null) return reply.code(401).send({ error: 'invalid_api_key' });
    const limit = Math.min(100, Number(request.query.limit ?? 25));
    const { rows } = await pool.query({ name: 'floor-page', text: PAGE, values: [key.workspace_id, limit + 1] });
    const shown = rows.slice(0, limit);
    return {
      object: 'list',
      data: shown.map((r) => ({ object: 'suppression', ...r })),
      hasMore: rows.length > limit,
      nextCursor: null,
    };
  });

  app.post<{ Body: { email: string } }>('/suppressions', async (request, reply) => {
    const key = await admit(request.headers.authorization, request.ip);
    if (key.id === null) return reply.code(401).send({ error: 'invalid_api_key' });
    const email = request.body.email.trim().toLowerCase();
    const id = crypto.randomUUID();
    const createdAt = new Date().toISOString();
    await pool.query({ name: 'floor-add', text: ADD, values: [key.workspace_id, id, email, createdAt, request.id] });
    reply.code(201);
    return { object: 'suppression', id, email, reason: 'manual', detail: null, removable: true, createdAt };
  });

  app.post<{ Body: { from: string; to: string; subject: string; text?: string; html?: string } }>(
    '/emails',
    async (request, reply) => {
      const key = await admit(request.headers.authorization, request.ip);
      if (key.id === null) return reply.code(401).send({ error: 'invalid_api_key' });
      const { from, to, subject } = request.body;
      const id = `em_${crypto.randomBytes(12).toString('hex')}`;
      const { rows } = await pool.query({
        name: 'floor-send',
        text: SEND,
        values: [key.workspace_id, from, to.toLowerCase(), id, subject, JSON.stringify(request.body)],
      });
      if (rows.length === 0) return reply.code(422).send({ error: 'refused' });
      reply.code(201);
      return { object: 'email', id, status: 'queued' };
    },
  );

  return { app, workspaces: [], close: () => pool.end() };
});
