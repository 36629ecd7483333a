import type pg from 'pg';
import type { TextIndex } from './port.ts';

/** The `message_texts` table the threads list searches (projections/threads/queries.ts). */
export const TEXT_INDEX_SCHEMA = `
  CREATE TABLE IF NOT EXISTS message_texts (sha256 text PRIMARY KEY, search tsvector NOT NULL);
  CREATE INDEX IF NOT EXISTS message_texts_search ON message_texts USING gin (search);`;

/** Texts written by one INSERT at most; more waiting go out in the next. */
const TEXTS_PER_INSERT = 200;

interface Pending {
  sha256: string;
  text: string;
  resolve(): void;
  reject(error: unknown): void;
}

/**
 * Body text as a tsvector of the `simple` configuration (no stemming: mail arrives in every
 * language, and a word found is the word written). The same hash is the same bytes: written once.
 *
 * Puts waiting while one INSERT is out go in the next, together: each arriving message waits
 * for its text before the 250, and one commit (one WAL flush) for many is what lets arrivals
 * keep up under load, as the small blobs do (infra/blobs/postgres.ts).
 */
export class PostgresTextIndex implements TextIndex {
  #waiting: Pending[] = [];
  #inserting = false;

  constructor(private readonly pool: pg.Pool) {}

  put(sha256: string, text: string): Promise<void> {
    return new Promise((resolve, reject) => {
      // PostgreSQL text holds no U+0000, which a body may carry (`=00` in quoted-printable); it parts words as a space does.
      this.#waiting.push({ sha256, text: text.replaceAll('\u0000', ' '), resolve, reject });
      if (!this.#inserting) void this.#insert();
    });
  }

  async #insert(): Promise<void> {
    this.#inserting = true;
    while (this.#waiting.length > 0) {
      const batch = this.#waiting.splice(0, TEXTS_PER_INSERT);
      try {
        await this.#write(batch);
        for (const p of batch) p.resolve();
      } catch (error) {
        if (batch.length === 1) batch[0]!.reject(error);
        // One text the database refuses (a tsvector past 1 MB) must not refuse the others with it.
        else for (const p of batch) await this.#write([p]).then(p.resolve, p.reject);
      }
    }
    this.#inserting = false;
  }

  async #write(batch: Pending[]): Promise<void> {
    // Prepared: it runs for every arriving message, and its parse cost about what its run did.
    await this.pool.query({
      name: 'message_texts_put',
      text: `INSERT INTO message_texts (sha256, search)
       SELECT h, to_tsvector('simple', t) FROM unnest($1::text[], $2::text[]) AS u(h, t)
       ON CONFLICT (sha256) DO NOTHING`,
      values: [batch.map((p) => p.sha256), batch.map((p) => p.text)],
    });
  }
}
