import { workspaceOfPartition } from '../../domain/shared/partitions.ts';
import type { SecretStore } from '../../infra/secrets/port.ts';
import { WorkspaceTokens } from '../signed-tokens.ts';

/**
 * What a link names: the partition (workspace and mode), the recipient's address, the audience
 * (null: everything) and the message it was mailed in (null in links made before they named one).
 */
export interface UnsubscribeLink {
  partition: string;
  email: string;
  audienceId: string | null;
  emailId?: string | null;
}

/**
 * The links in `List-Unsubscribe` and their preferences page: `/unsubscribe/<token>`, a token
 * signed under the workspace's unsubscribe key (commands/signed-tokens.ts) naming the partition,
 * the recipient and the audience.
 */
export class UnsubscribeLinks {
  readonly #tokens: WorkspaceTokens;
  readonly #base: string;

  constructor(secrets: SecretStore, publicUrl: string) {
    this.#tokens = new WorkspaceTokens(secrets, 'unsubscribe', 1200);
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
    const sign = await this.#tokens.signer(workspaceOfPartition(link.partition));
    return sign([link.partition, link.email.toLowerCase(), link.audienceId ?? '', link.emailId ?? '']);
  }

  /** What a token names, or null when it is not one of ours (malformed, altered, or signed by no key we hold). */
  async read(token: string): Promise<UnsubscribeLink | null> {
    // Three fields: a link mailed before links named their message; it still works.
    const fields = await this.#tokens.read(token, (f) =>
      (f.length === 3 || f.length === 4) && f[0] ? workspaceOfPartition(f[0]) : null,
    );
    if (!fields) return null;
    const [partition, email, audienceId, emailId] = fields as [string, string, string, string | undefined];
    if (!email) return null;
    return { partition, email, audienceId: audienceId || null, emailId: emailId || null };
  }
}
