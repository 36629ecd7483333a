import crypto from 'node:crypto';
import { workspaceOfPartition } from '../../domain/shared/partitions.ts';
import type { SecretStore } from '../../infra/secrets/port.ts';

/** What a link names: the partition (workspace and mode), the recipient's address, and the audience (null: everything). */
export interface UnsubscribeLink {
  partition: string;
  email: string;
  audienceId: string | null;
}

/** Where a workspace's unsubscribe key lives in the vault. */
const keyId = (workspaceId: string) => `unsubscribe-key:${workspaceId}`;
const KEY_CACHE_SIZE = 10_000;

/**
 * The links in `List-Unsubscribe` and their preferences page: `/unsubscribe/<payload>.<mac>`, the
 * payload the base64url of what the link names, the MAC an HMAC-SHA256 under a key of the
 * workspace kept in the vault (created on first use). Without the key nobody makes a link, so
 * links can be neither forged nor enumerated; a workspace's key never signs another's links.
 * Keys never change, so they are kept in memory once read.
 */
export class UnsubscribeLinks {
  readonly #secrets: SecretStore;
  readonly #base: string;
  readonly #keys = new Map<string, Buffer>();

  constructor(secrets: SecretStore, publicUrl: string) {
    this.#secrets = secrets;
    this.#base = publicUrl.replace(/\/+$/, '');
  }

  /** The https URL of the link for a recipient. */
  async url(link: UnsubscribeLink): Promise<string> {
    return `${this.#base}/unsubscribe/${await this.token(link)}`;
  }

  /** Whether a URL is one of these links (a message's own unsubscribe link is never tracked: commands/emails/tracking.ts). */
  isLink(url: string): boolean {
    return url.startsWith(`${this.#base}/unsubscribe/`);
  }

  async token(link: UnsubscribeLink): Promise<string> {
    const payload = Buffer.from(`${link.partition}\n${link.email.toLowerCase()}\n${link.audienceId ?? ''}`).toString(
      'base64url',
    );
    const key = await this.#key(workspaceOfPartition(link.partition), true);
    return `${payload}.${mac(key!, payload)}`;
  }

  /** What a token names, or null when it is not one of ours (malformed, altered, or signed by no key we hold). */
  async read(token: string): Promise<UnsubscribeLink | null> {
    const [payload, given, extra] = token.split('.');
    if (!payload || !given || extra !== undefined || payload.length > 1200) return null;
    const [partition, email, audienceId, more] = Buffer.from(payload, 'base64url').toString('utf8').split('\n');
    if (!partition || !email || audienceId === undefined || more !== undefined) return null;
    const key = await this.#key(workspaceOfPartition(partition), false);
    if (!key) return null;
    const expected = Buffer.from(mac(key, payload));
    const actual = Buffer.from(given);
    if (expected.length !== actual.length || !crypto.timingSafeEqual(expected, actual)) return null;
    return { partition, email, audienceId: audienceId || null };
  }

  async #key(workspaceId: string, create: boolean): Promise<Buffer | undefined> {
    const cached = this.#keys.get(workspaceId);
    if (cached) return cached;
    const stored = create
      ? await this.#secrets.claim(keyId(workspaceId), crypto.randomBytes(32).toString('base64'))
      : await this.#secrets.get(keyId(workspaceId));
    if (stored === undefined) return undefined;
    if (this.#keys.size >= KEY_CACHE_SIZE) this.#keys.clear();
    const key = Buffer.from(stored, 'base64');
    this.#keys.set(workspaceId, key);
    return key;
  }
}

const mac = (key: Buffer, payload: string) =>
  crypto.createHmac('sha256', key).update(`unsubscribe:${payload}`).digest('base64url');
