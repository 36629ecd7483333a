import type pg from 'pg';
import { sql, type Kysely } from 'kysely';
import type { ReadModels } from '../projections/tables.ts';

/**
 * Each key's own request log. It is telemetry, not a domain fact: written straight to a table
 * (batched off the request path), never to the event store. Method, path, status, error code,
 * duration, IP and user agent only: never bodies or query strings.
 */
export const REQUEST_LOG_SCHEMA = `
CREATE TABLE IF NOT EXISTS api_key_requests (
  id bigserial PRIMARY KEY,
  workspace_id text NOT NULL,
  key_id text NOT NULL,
  request_id text NOT NULL,
  method text NOT NULL,
  path text NOT NULL,
  status integer NOT NULL,
  error_code text,
  duration_ms double precision NOT NULL,
  ip text,
  user_agent text,
  created_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS api_key_requests_key ON api_key_requests (key_id, created_at DESC, id DESC);`;

export interface RequestLogEntry {
  workspace_id: string;
  key_id: string;
  request_id: string;
  method: string;
  path: string;
  status: number;
  error_code: string | null;
  duration_ms: number;
  ip: string | null;
  user_agent: string | null;
  created_at: Date;
}

/** An entry as stored, with the id that orders entries of the same instant. */
export type RequestLogRow = RequestLogEntry & { id: number };
type RequestLogTables = { api_key_requests: RequestLogRow };

/** An instant as the caller wrote it, every fractional digit kept (a Date would keep milliseconds only). */
const instant = (iso: string) => sql<Date>`${iso}::timestamptz`;

const COLUMNS = [
  'workspace_id',
  'key_id',
  'request_id',
  'method',
  'path',
  'status',
  'error_code',
  'duration_ms',
  'ip',
  'user_agent',
  'created_at',
] as const;

export class RequestLog {
  private buffer: RequestLogEntry[] = [];
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly pool: pg.Pool,
    private readonly flushMs = 200,
  ) {}

  record(entry: RequestLogEntry): void {
    this.buffer.push(entry);
    if (this.buffer.length >= 500) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), this.flushMs);
  }

  /** Writes what is buffered; readers call it first so a key sees its own latest requests. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const rows = this.buffer;
    this.buffer = [];
    this.flushing = this.flushing.then(async () => {
      if (rows.length === 0) return;
      const columns = COLUMNS.map((c) => rows.map((r) => r[c]));
      await this.pool
        .query(
          `INSERT INTO api_key_requests (${COLUMNS.join(', ')})
           SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int[], $7::text[],
                                $8::float8[], $9::text[], $10::text[], $11::timestamptz[])`,
          columns,
        )
        .catch((error) => console.error('request log write failed:', error));
    });
    return this.flushing;
  }
}

export interface RequestLogFilter {
  failedOnly?: boolean;
  statuses?: number[];
  path?: string;
  since?: string;
  until?: string;
}

export async function listRequests(
  db: Kysely<ReadModels>,
  keyId: string,
  filter: RequestLogFilter,
  limit: number,
  after: [string, number] | null,
) {
  let q = db.withTables<RequestLogTables>().selectFrom('api_key_requests').selectAll().where('key_id', '=', keyId);
  if (filter.failedOnly) q = q.where('status', '>=', 400);
  if (filter.statuses?.length) q = q.where('status', 'in', filter.statuses);
  if (filter.path) q = q.where('path', '=', filter.path);
  if (filter.since) q = q.where('created_at', '>=', instant(filter.since));
  if (filter.until) q = q.where('created_at', '<', instant(filter.until));
  if (after) q = q.where((eb) => eb(eb.refTuple('created_at', 'id'), '<', eb.tuple(instant(after[0]), after[1])));
  return q
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
}
