import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { BulkWriter } from './port.ts';

/**
 * Bulk writes as PostgreSQL's COPY ... FROM STDIN in COPY's text format: no statement to parse and
 * no JSON for the server to take apart per row, several times cheaper for it than an insert of
 * the same rows. Each write is its own short transaction (a long one would hold back what the
 * live subscribers see: docs/decisions/event-sourcing.md, "The price of the xmin rule"); it skips
 * the WAL flush, as a rebuild's batches did before it, since a rebuild that dies starts over.
 */
export function copyWriter(pool: pg.Pool): BulkWriter {
  return {
    async write(table, columns, rows) {
      let text = '';
      for (const row of rows) {
        for (let i = 0; i < row.length; i++) text += (i === 0 ? '' : '\t') + field(row[i]);
        text += '\n';
      }
      const client = await pool.connect();
      try {
        await client.query('BEGIN; SET LOCAL synchronous_commit = off');
        const stream = client.query(copyFrom(`COPY ${table} (${columns.join(', ')}) FROM STDIN`));
        // pg-copy-streams finishes once the server has taken every row.
        await new Promise<void>((resolve, reject) => {
          stream.on('error', reject);
          stream.on('finish', resolve);
          stream.end(text);
        });
        await client.query('COMMIT');
        client.release();
      } catch (error) {
        // The connection may be mid-COPY or mid-transaction: dropped rather than pooled.
        client.release(error as Error);
        throw error;
      }
    },
  };
}

/** One value in COPY's text format: `\N` for null, backslash escapes for the characters that delimit. */
function field(value: unknown): string {
  if (value === null || value === undefined) return '\\N';
  if (typeof value === 'boolean') return value ? 't' : 'f';
  if (typeof value === 'number') return String(value);
  const text = value instanceof Date ? value.toISOString() : typeof value === 'string' ? value : JSON.stringify(value);
  return ESCAPED.test(text) ? text.replace(ESCAPES, (c) => REPLACEMENTS[c]!) : text;
}

const ESCAPED = /[\\\n\r\t]/;
const ESCAPES = /[\\\n\r\t]/g;
const REPLACEMENTS: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };
