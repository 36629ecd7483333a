import crypto from 'node:crypto';
import type { SecretStore } from '../infra/secrets/port.ts';

const KEY_CACHE_SIZE = 10_000;

/**
 * Tokens that travel in links we mail (unsubscribe, tracking): `<payload>.<mac>`, the payload the
 * base64url of the token's fields joined by line breaks, the MAC an HMAC-SHA256 under a key of the
 * workspace kept in the vault, one key per purpose, created on first use. Without the key nobody
 * makes a token, so tokens can be neither forged nor enumerated, and a workspace's key never signs
 * another's. Keys never change, so they are kept in memory once read.
 */
export class WorkspaceTokens {
  readonly #secrets: SecretStore;
  readonly #purpose: string;
  readonly #maxPayload: number;
  readonly #keys = new Map<string, Buffer>();

  constructor(secrets: SecretStore, purpose: string, maxPayload: number) {
    this.#secrets = secrets;
    this.#purpose = purpose;
    this.#maxPayload = maxPayload;
  }

  /** Signs tokens of one workspace; the key is read (or made) once for all of them. */
  async signer(workspaceId: string): Promise<(fields: string[]) => string> {
    const key = (await this.#key(workspaceId, true))!;
    return (fields) => {
      const payload = Buffer.from(fields.join('\n')).toString('base64url');
      return `${payload}.${this.#mac(key, payload)}`;
    };
  }

  /**
   * The fields of a token of ours, or null (malformed, altered, or signed by no key we hold).
   * `workspaceOf` names the workspace whose key must have signed them, from the fields themselves.
   */
  async read(token: string, workspaceOf: (fields: string[]) => string | null): Promise<string[] | null> {
    const [payload, given, extra] = token.split('.');
    if (!payload || !given || extra !== undefined || payload.length > this.#maxPayload) return null;
    const fields = Buffer.from(payload, 'base64url').toString('utf8').split('\n');
    const workspaceId = workspaceOf(fields);
    if (!workspaceId) return null;
    const key = await this.#key(workspaceId, false);
    if (!key) return null;
    const expected = Buffer.from(this.#mac(key, payload));
    const actual = Buffer.from(given);
    if (expected.length !== actual.length || !crypto.timingSafeEqual(expected, actual)) return null;
    return fields;
  }

  #mac(key: Buffer, payload: string): string {
    return crypto.createHmac('sha256', key).update(`${this.#purpose}:${payload}`).digest('base64url');
  }

  async #key(workspaceId: string, create: boolean): Promise<Buffer | undefined> {
    const cached = this.#keys.get(workspaceId);
    if (cached) return cached;
    const id = `${this.#purpose}-key:${workspaceId}`;
    const stored = create
      ? await this.#secrets.claim(id, crypto.randomBytes(32).toString('base64'))
      : await this.#secrets.get(id);
    if (stored === undefined) return undefined;
    if (this.#keys.size >= KEY_CACHE_SIZE) this.#keys.clear();
    const key = Buffer.from(stored, 'base64');
    this.#keys.set(workspaceId, key);
    return key;
  }
}
