import { Parser } from 'htmlparser2';
import { decideRecordEngagement } from '../../domain/emails/decide.ts';
import { emailStream } from '../../domain/emails/events.ts';
import { emailAggregate } from '../../domain/emails/state.ts';
import { DomainError } from '../../domain/shared/errors.ts';
import { workspaceOfPartition } from '../../domain/shared/partitions.ts';
import type { SecretStore } from '../../infra/secrets/port.ts';
import { execute, type CommandContext } from '../execute.ts';
import { WorkspaceTokens } from '../signed-tokens.ts';

/** What a tracking link names: the message (its partition and id), the recipient and, for a click, the target. */
export interface TrackingToken {
  kind: 'open' | 'click';
  partition: string;
  emailId: string;
  /** Lower-case; empty when the message went to several recipients. */
  recipient: string;
  /** The original target of a click; empty for an open. */
  url: string;
}

/** The paths of the open pixel and of the click redirect, on the domain's tracking host (api/pages/tracking.ts). */
export const OPEN_PATH = '/t/o/';
export const CLICK_PATH = '/t/c/';

/** Links longer than this are left as they are: the token carries the target, and the link must stay a URL mail clients keep whole. */
export const TRACKED_URL_MAX = 2000;

const KINDS = { open: 'o', click: 'c' } as const;
const TOKEN_MAX = 4 * TRACKED_URL_MAX;

/**
 * The signed tokens of the open pixel and the rewritten links (commands/signed-tokens.ts, under a
 * tracking key of the workspace apart from the unsubscribe links' key): a click token can never
 * redirect to a target we did not sign (no open redirect), and tokens cannot be enumerated.
 */
export class TrackingLinks {
  readonly #tokens: WorkspaceTokens;

  constructor(secrets: SecretStore) {
    this.#tokens = new WorkspaceTokens(secrets, 'tracking', TOKEN_MAX);
  }

  /** Signs the tokens of one message for one recipient (or '' for several): the key is read once. */
  async signer(partition: string, emailId: string, recipient: string) {
    const sign = await this.#tokens.signer(workspaceOfPartition(partition));
    const token = (kind: TrackingToken['kind'], url: string) =>
      sign([KINDS[kind], partition, emailId, recipient.toLowerCase(), url]);
    return { open: () => token('open', ''), click: (url: string) => token('click', url) };
  }

  /** What a token names, or null when it is not one of ours (malformed, altered, or signed by no key we hold). */
  async read(token: string): Promise<TrackingToken | null> {
    const fields = await this.#tokens.read(token, (f) => (f.length === 5 && f[1] ? workspaceOfPartition(f[1]) : null));
    if (!fields) return null;
    const [kind, partition, emailId, recipient, url] = fields as [string, string, string, string, string];
    const named = kind === KINDS.open ? 'open' : kind === KINDS.click ? 'click' : null;
    if (!named || !emailId || (named === 'click') !== (url !== '')) return null;
    return { kind: named, partition, emailId, recipient, url };
  }
}

export interface HtmlTracking {
  /** The https URL of the open pixel. */
  pixel: string;
  /** The https URL a link to `url` becomes. */
  click(url: string): string;
  /** Links left alone besides mailto:, anchors and the like (our unsubscribe links). */
  keep(url: string): boolean;
}

const escapeAttribute = (value: string) => value.replace(/&/g, '&amp;').replace(/"/g, '&quot;');

/** An absolute http(s) link that fits in a token, as written (trimmed), or null for anything else. */
function trackable(href: string): string | null {
  const url = href.trim();
  if (url.length > TRACKED_URL_MAX || !/^https?:\/\//i.test(url)) return null;
  try {
    new URL(url);
  } catch {
    return null;
  }
  return url;
}

/**
 * The html with every absolute http(s) link of `<a>` and `<area>` pointing at the click redirect
 * and a 1x1 open pixel before `</body>` (or at the end). htmlparser2 finds the attributes and
 * their offsets, and only those spans are replaced: the rest of the markup stays byte for byte
 * (conditional comments for Outlook included), which a parse and re-serialisation would not keep.
 */
export function trackHtml(html: string, tracking: HtmlTracking): string {
  const edits: { start: number; end: number; text: string }[] = [];
  let tag = '';
  let bodyEnd = -1;
  const parser = new Parser(
    {
      onopentagname(name) {
        tag = name;
      },
      onattribute(name, value) {
        if (name !== 'href' || (tag !== 'a' && tag !== 'area')) return;
        const url = trackable(value);
        if (url === null || tracking.keep(url)) return;
        edits.push({
          start: parser.startIndex,
          end: parser.endIndex,
          text: `href="${escapeAttribute(tracking.click(url))}"`,
        });
      },
      onclosetag(name, implied) {
        if (name === 'body' && !implied && bodyEnd < 0) bodyEnd = parser.startIndex;
      },
    },
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true },
  );
  parser.end(html);
  const pixel = `<img src="${escapeAttribute(tracking.pixel)}" width="1" height="1" alt="" style="display:block;width:1px;height:1px;border:0">`;
  edits.push({ start: bodyEnd < 0 ? html.length : bodyEnd, end: bodyEnd < 0 ? html.length : bodyEnd, text: pixel });
  let out = '';
  let at = 0;
  for (const edit of edits.sort((a, b) => a.start - b.start)) {
    out += html.slice(at, edit.start) + edit.text;
    at = edit.end;
  }
  return out + html.slice(at);
}

/**
 * Records the open or click a valid token names, on the message's stream, as the system: the
 * recipient's mail client holds no credential. False when the message does not take it (not
 * accepted, cancelled, or past its count: domain/emails/decide.ts); the answer to the fetch does
 * not depend on it.
 */
export async function recordEngagement(
  ctx: CommandContext,
  token: TrackingToken,
  userAgent: string | null,
  now: string,
): Promise<boolean> {
  const actor = { workspaceId: token.partition, kind: 'system', id: null } as const;
  try {
    const { events } = await execute(ctx, actor, emailStream(token.partition, token.emailId), emailAggregate, (s) =>
      decideRecordEngagement(s, {
        recipient: token.recipient,
        url: token.kind === 'click' ? token.url : null,
        userAgent,
        at: now,
      }),
    );
    return events.length > 0;
  } catch (error) {
    if (error instanceof DomainError) return false;
    throw error;
  }
}
