import type pg from 'pg';
import type { TextIndex } from './port.ts';

/** The `message_texts` table the threads list searches (projections/threads/queries.ts). */
export const TEXT_INDEX_SCHEMA = `
  CREATE TABLE IF NOT EXISTS message_texts (sha256 text PRIMARY KEY, search tsvector NOT NULL);
  CREATE INDEX IF NOT EXISTS message_texts_search ON message_texts USING gin (search);`;

/**
 * Body text as a tsvector of the `simple` configuration (no stemming: mail arrives in every
 * language, and a word found is the word written). The same hash is the same bytes: written once.
 */
export class PostgresTextIndex implements TextIndex {
  constructor(private readonly pool: pg.Pool) {}

  async put(sha256: string, text: string): Promise<void> {
    await this.pool.query(
      `INSERT INTO message_texts (sha256, search) VALUES ($1, to_tsvector('simple', $2)) ON CONFLICT (sha256) DO NOTHING`,
      [sha256, text],
    );
  }
}
