import crypto from 'node:crypto';
import type pg from 'pg';
import type { SecretStore } from './port.ts';

const SECRETS_SCHEMA = `
CREATE TABLE IF NOT EXISTS vault_secrets (
  id text PRIMARY KEY,
  nonce bytea NOT NULL,
  ciphertext bytea NOT NULL,
  tag bytea NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
)`;

/** Read back after every start: a master key other than the one the vault was filled under stops the start. */
const CANARY = 'vault:canary';

/**
 * Secrets the service must use but never show: DKIM private keys, provider API keys held during
 * an import. They stay out of events (the audit history prints events) and are stored here,
 * each encrypted with AES-256-GCM under the master key: a random 12-byte nonce per write, the id
 * as associated data, so a value copied onto another id does not decrypt. The table alone
 * (a dump, a backup, a replica) reveals nothing without the master key.
 */
export class SecretVault implements SecretStore {
  // Private fields: util.inspect and JSON never show them, so logging the vault shows no key.
  readonly #pool: pg.Pool;
  readonly #key: Buffer;

  private constructor(pool: pg.Pool, key: Buffer) {
    this.#pool = pool;
    this.#key = key;
  }

  /** The table; run with the other migrations, one process at a time. */
  static async migrate(db: pg.Pool | pg.PoolClient): Promise<void> {
    await db.query(SECRETS_SCHEMA);
  }

  /**
   * Checks the master key against the vault's canary (writing it the first time): a wrong key
   * is refused here, at start, not at the first signing.
   */
  static async open(pool: pg.Pool, masterKey: Buffer): Promise<SecretVault> {
    if (masterKey.length !== 32) throw new RangeError('SecretVault: the master key must be 32 bytes');
    const vault = new SecretVault(pool, Buffer.from(masterKey));
    const row = encrypt(vault.#key, CANARY, 'canary');
    await pool.query(
      'INSERT INTO vault_secrets (id, nonce, ciphertext, tag) VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING',
      [CANARY, row.nonce, row.ciphertext, row.tag],
    );
    try {
      await vault.get(CANARY);
    } catch {
      throw new Error(
        'SecretVault: the master key (SECRETS_KEY or the key file) is not the one the stored secrets were encrypted under',
      );
    }
    return vault;
  }

  /** Stores `plaintext` under `id`, replacing what was there. */
  async put(id: string, plaintext: string): Promise<void> {
    const row = encrypt(this.#key, id, plaintext);
    await this.#pool.query(
      `INSERT INTO vault_secrets (id, nonce, ciphertext, tag) VALUES ($1, $2, $3, $4)
       ON CONFLICT (id) DO UPDATE SET nonce = excluded.nonce, ciphertext = excluded.ciphertext, tag = excluded.tag, updated_at = now()`,
      [id, row.nonce, row.ciphertext, row.tag],
    );
  }

  /**
   * Stores `plaintext` under `id` unless a secret is there already, and answers the one stored:
   * of two processes creating a workspace's key at once, both go on with the same one.
   */
  async claim(id: string, plaintext: string): Promise<string> {
    const row = encrypt(this.#key, id, plaintext);
    await this.#pool.query(
      'INSERT INTO vault_secrets (id, nonce, ciphertext, tag) VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING',
      [id, row.nonce, row.ciphertext, row.tag],
    );
    const stored = await this.get(id);
    if (stored === undefined)
      throw new Error(`SecretVault: the secret ${JSON.stringify(id)} was removed while claimed`);
    return stored;
  }

  /** The secret, or undefined when there is none; throws when it does not decrypt (wrong key, altered row). */
  async get(id: string): Promise<string | undefined> {
    const { rows } = await this.#pool.query<{ nonce: Buffer; ciphertext: Buffer; tag: Buffer }>(
      'SELECT nonce, ciphertext, tag FROM vault_secrets WHERE id = $1',
      [id],
    );
    const row = rows[0];
    if (!row) return undefined;
    try {
      const decipher = crypto.createDecipheriv('aes-256-gcm', this.#key, row.nonce);
      decipher.setAAD(Buffer.from(id, 'utf8'));
      decipher.setAuthTag(row.tag);
      return Buffer.concat([decipher.update(row.ciphertext), decipher.final()]).toString('utf8');
    } catch {
      throw new Error(
        `SecretVault: the secret ${JSON.stringify(id)} does not decrypt under this master key (or was altered)`,
      );
    }
  }

  /** Removes the secret; true when there was one. */
  async delete(id: string): Promise<boolean> {
    const { rowCount } = await this.#pool.query('DELETE FROM vault_secrets WHERE id = $1', [id]);
    return (rowCount ?? 0) > 0;
  }
}

function encrypt(key: Buffer, id: string, plaintext: string): { nonce: Buffer; ciphertext: Buffer; tag: Buffer } {
  const nonce = crypto.randomBytes(12);
  const cipher = crypto.createCipheriv('aes-256-gcm', key, nonce);
  cipher.setAAD(Buffer.from(id, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return { nonce, ciphertext, tag: cipher.getAuthTag() };
}
