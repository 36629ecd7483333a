import { catchAllOwner } from '../../domain/shared/mailbox-owners.ts';
import { randomUUID } from 'node:crypto';
import { decideAcceptEmail, decideCancelEmail, type AcceptedData } from '../../domain/emails/decide.ts';
import { emailStream, type AcceptedRecipient, type SendingStream } from '../../domain/emails/events.ts';
import {
  ATTACHMENTS_BYTES_MAX,
  ATTACHMENTS_MAX,
  BODY_MAX,
  checkRecipients,
  checkScheduledAt,
  HEADER_VALUE_MAX,
  HEADERS_MAX,
  parseMailbox,
  parseMailboxes,
  checkMessageId,
  SUBJECT_MAX,
  TAGS_MAX,
  type Mailbox,
} from '../../domain/emails/rules.ts';
import { emailAggregate, type EmailState } from '../../domain/emails/state.ts';
import { checkTranslationLength } from '../../domain/emails/translation.ts';
import { sendsFrom, type ViewOnly } from '../../domain/members/sending.ts';
import { checkCustomHeaders } from '../../domain/sending/headers.ts';
import { DomainError, fail } from '../../domain/shared/errors.ts';
import { workspaceOfPartition, type Mode } from '../../domain/shared/partitions.ts';
import { sendableVersion } from '../../domain/templates/decide.ts';
import type { BlobStore } from '../../infra/blobs/port.ts';
import type { AiPorts } from '../ai/actions.ts';
import { touchContact } from '../contacts/handlers.ts';
import { assertStreamOpen } from '../sending-streams/handlers.ts';
import type { UnsubscribeLinks } from '../unsubscribes/links.ts';
import { execute, loadState, type Actor, type CommandContext } from '../execute.ts';
import { newId } from '../ids.ts';
import { renderVersion, type RenderableVersion, type TemplateRenderer } from '../templates/render.ts';
import { reserveSend } from './quota.ts';
import { CLICK_PATH, OPEN_PATH, trackHtml, type TrackingLinks } from './tracking.ts';
import { translateSpending, translationTarget, type TranslationTarget } from './translate.ts';

export { SendQuotaExceeded } from './quota.ts';

/** An address of the workspace as a send needs it. */
export interface SenderAddress {
  id: string;
  /** Lower-case. */
  address: string;
  domain: string;
  domainId: string;
  enabled: boolean;
  /** The domain's tracking host while it is `active` (links and the open pixel go through it), else null. */
  trackingHost: string | null;
  /**
   * The signatures that sign new mail and replies from it when no `signatureId` is given: the
   * address's own defaults, else its domain's catch-all's. Read with the address, one round trip.
   */
  defaults: { newMail: SignatureForSend | null; replies: SignatureForSend | null };
}

export interface SignatureForSend {
  id: string;
  /** The address id it signs for, or `catchall-<domain id>`. */
  owner: string;
  html: string;
}

/** What a send reads of the read models; system.ts builds it from the projections' queries. */
export interface SendLookups {
  address(workspaceId: string, address: string): Promise<SenderAddress | undefined>;
  /**
   * `address` as its domain's catch-all sends it (id `catchall-<domain id>`, the catch-all's
   * signatures): a domain of the workspace verified for receiving, its catch-all on; else undefined.
   */
  catchAll(workspaceId: string, address: string): Promise<SenderAddress | undefined>;
  signature(workspaceId: string, id: string): Promise<SignatureForSend | undefined>;
  /**
   * Of the addresses given (lower-case), in the partition: the suppressed ones with their
   * suppression's reason, and those that are contacts (whose `lastSeenAt` a send moves). One
   * round trip for both: a batch of sends makes one per message. On the broadcast lane, an
   * address unsubscribed from everything is suppressed with the reason `unsubscribe`.
   */
  recipients(
    partition: string,
    emails: string[],
    broadcast: boolean,
  ): Promise<{ suppressed: Map<string, string>; contacts: Set<string> }>;
  /** By `tpl_` id or slug. */
  template(
    workspaceId: string,
    idOrSlug: string,
  ): Promise<{ id: string; archived: boolean; publishedVersion: number | null; revision: number } | undefined>;
  templateVersion(templateId: string, version: number): Promise<RenderableVersion | undefined>;
  /** A file of the partition (an upload, or an attachment of received mail), whatever the caller reaches. */
  file(partition: string, id: string): Promise<StoredFile | undefined>;
}

/** A file as a send attaches it: its bytes are the blob `sha256`. */
export interface StoredFile {
  id: string;
  /** The mailbox it belongs to (null: an upload of the whole workspace). */
  address: string | null;
  domain: string | null;
  filename: string | null;
  contentType: string;
  size: number;
  sha256: string;
}

export interface ComposeAddress {
  address: string;
  name?: string;
}

/** The message handed to the composer (infra/outbound/compose.ts `composeMessage`, wired in system.ts). */
export interface MessageToCompose {
  messageId: string;
  date: Date;
  from: ComposeAddress;
  to: ComposeAddress[];
  cc?: ComposeAddress[];
  bcc?: ComposeAddress[];
  replyTo?: ComposeAddress[];
  subject: string;
  text?: string;
  html?: string;
  attachments?: { filename: string; content: Uint8Array; contentType: string; contentId?: string }[];
  headers?: Record<string, string>;
  inReplyTo?: string;
  references?: string[];
  /** RFC 8058 one-click unsubscribe: the https link (the composer adds both headers). */
  listUnsubscribe?: { url: string };
}

/** What sending needs besides the event store: built once in system.ts, shared by every way of sending. */
export interface SendingPorts {
  lookups: SendLookups;
  renderer: TemplateRenderer;
  blobs: BlobStore;
  compose(message: MessageToCompose): Promise<{ raw: Buffer }>;
  /** Live messages a workspace may send per calendar month (UTC); `SEND_MONTHLY_ALLOWANCE`. */
  monthlyAllowance: number;
  /** The signed unsubscribe links of broadcast-lane mail (commands/unsubscribes/links.ts). */
  unsubscribeLinks: UnsubscribeLinks;
  /** The signed open pixel and click links of mail from a domain whose tracking host is active (tracking.ts). */
  trackingLinks: TrackingLinks;
  /** The model that translates (`translate`), and the daily allowance of AI actions. */
  ai: AiPorts;
}

export interface SendContext {
  commands: CommandContext;
  sending: SendingPorts;
}

export type SendSource = AcceptedData['source'];

/** Who sends: the actor (its `workspaceId` is the mode's partition), and what its credential reaches. */
export interface Sender {
  actor: Actor;
  mode: Mode;
  /**
   * The addresses the caller may send as: null for every address of the workspace; otherwise the
   * addresses listed and every address of the domains listed (a key's or app's allowlists, the one
   * address an SMTP login holds).
   */
  reach: { addresses: string[]; domains: string[] } | null;
  /** Within the reach, where an app of a member with `viewer` grants reads but may not send. */
  viewOnly?: ViewOnly | null;
  source: SendSource;
  /**
   * `from` may be an address no address row holds, on a domain whose catch-all is on: a rule's
   * automatic reply answers from the address the mail reached the catch-all at
   * (commands/rules/run.ts). Only the system's rule runs set it; every other caller needs an address.
   */
  catchAll?: boolean;
}

/** Either `content` (base64, with `filename`) or `fileId` (a stored file; `filename` and `contentType` override its own). */
export interface AttachmentInput {
  filename?: string;
  /** Base64. */
  content?: string;
  fileId?: string;
  contentType?: string;
  /** Set for an inline image the html refers to as `cid:<contentId>`. */
  contentId?: string;
}

/** One message to send, as the API takes it (api/routes/emails) and every other way in gives it. */
export interface SendInput {
  /** A caller-chosen id (`em_`): sending it again is a repeat answering the stored message. Default: a new one. */
  emailId?: string;
  from: string;
  to?: string | string[];
  cc?: string | string[];
  bcc?: string | string[];
  replyTo?: string | string[];
  subject?: string;
  text?: string;
  html?: string;
  template?: {
    id: string;
    props?: Record<string, unknown>;
    /**
     * Leave out props the version does not declare instead of refusing them (422
     * `unknown_template_prop`): automations pass the triggering event's properties whole.
     */
    looseProps?: boolean;
  };
  signatureId?: string;
  attachments?: AttachmentInput[];
  headers?: Record<string, string>;
  tags?: { name: string; value: string }[];
  scheduledAt?: string;
  /** The Message-ID answered: the reply threads with it and takes the reply default signature. */
  inReplyTo?: string;
  references?: string[];
  /** Translate subject, text and html into `to` (a BCP 47 tag) at acceptance, through the AI port. */
  translate?: { to: string };
  /**
   * One recipient's message of a broadcast (source `broadcast`): recorded on the email, and its
   * unsubscribe link leaves `audienceId` (null: everything).
   */
  broadcast?: { id: string; audienceId: string | null };
}

export interface Sent {
  email: AcceptedData;
  /** The message existed already under the given `emailId`; nothing new was sent. */
  replayed: boolean;
}

const TAG_PART = /^[A-Za-z0-9_-]{1,256}$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const FILENAME_UNSAFE = /[\r\n\0"\\/]/;

const list = (v: string | string[] | undefined): string[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/**
 * Accepts one message: the one way in for `POST /emails`, each batch item, SMTP submission and
 * automations. Checks, in this order: translation (409 `translation_not_configured`, 422
 * `unknown_language`), `from` and
 * the caller's reach (403 `from_address_forbidden`, also where a member's `viewer` grant only
 * reads), recipients (422 `invalid_email_address`,
 * `too_many_recipients`), headers (422 `reserved_header`), tags, schedule, threading, attachments;
 * then what needs the read models: the address (403 `from_address_forbidden` when it is not the
 * workspace's, 409 `address_disabled`), content (the template's published version: 422
 * `template_not_found`, `template_archived`, `template_not_published`, `unknown_template_prop`),
 * signature, and for live mail an open lane (409 `stream_paused`), the length to translate (422
 * `translation_too_long`). A message to translate then spends an AI action (429
 * `ai_quota_exceeded`, `AiQuotaExceeded`) and is translated (503 `translation_failed`, the action
 * given back); the signature is added after, untranslated. Then drops suppressed
 * recipients with their reason, composes the MIME message, stores it in the blob store, reserves
 * a live send of the month (429 `send_quota_exceeded`, `SendQuotaExceeded`) and appends
 * `EmailAccepted`. A message whose recipients are all suppressed is accepted (its status is `failed`) and counts nothing
 * against the allowance. Refusals are `DomainError`s; nothing is stored for a refused message.
 */
export async function sendEmail(ctx: SendContext, sender: Sender, input: SendInput, now: Date): Promise<Sent> {
  const { sending } = ctx;
  const partition = sender.actor.workspaceId;
  const workspaceId = workspaceOfPartition(partition);
  const at = now.toISOString();
  const target =
    input.translate === undefined ? null : translationTarget(sending.ai, input.translate.to, 'translate.to');

  const mailbox = reachedMailbox(sender, input.from);
  const recipients = checkRecipients({
    to: parseMailboxes(list(input.to), 'to'),
    cc: parseMailboxes(list(input.cc), 'cc'),
    bcc: parseMailboxes(list(input.bcc), 'bcc'),
  });
  // The read models are asked at once, while the rest of the input is checked.
  const email = mailbox.email.toLowerCase();
  const addressRead = settled(
    sending.lookups
      .address(workspaceId, email)
      .then((row) => row ?? (sender.catchAll ? sending.lookups.catchAll(workspaceId, email) : undefined)),
  );
  const lane = streamOf(sender.source);
  const recipientsRead = settled(
    sending.lookups.recipients(
      partition,
      [...recipients.to, ...recipients.cc, ...recipients.bcc].map((r) => r.email.toLowerCase()),
      lane === 'broadcast',
    ),
  );
  // A paused lane refuses live sends (409 `stream_paused`) before anything is stored; test mail
  // never leaves the machine, so no lane's reputation is at stake.
  const laneOpen = settled(
    sender.mode === 'live' ? assertStreamOpen(ctx.commands, workspaceId, lane) : Promise.resolve(),
  );
  const replyTo = parseMailboxes(list(input.replyTo), 'replyTo');
  const headers = checkHeaders(input.headers ?? {});
  const tags = checkTags(input.tags ?? []);
  const scheduledAt = checkScheduledAt(input.scheduledAt, at);
  const inReplyTo = input.inReplyTo === undefined ? null : checkMessageId(input.inReplyTo, 'inReplyTo');
  const references = (input.references ?? []).map((r, i) => checkMessageId(r, `references.${i}`));
  const parts = checkAttachments(input.attachments ?? []);
  const attachmentsRead = settled(withFiles(sending, sender, parts));

  const from = senderAddress(mailbox, await addressRead());
  const attachments = await attachmentsRead();
  const content = await contentOf(sending, workspaceId, input);
  if (target !== null) checkTranslationLength(content);
  const signature = await signatureOf(sending.lookups, workspaceId, from, input.signatureId, inReplyTo);
  await laneOpen();

  const emailId = input.emailId ?? newId.email();
  const stream = emailStream(partition, emailId);
  // Mail to a contact is activity of the contact (commands/contacts: only forward). Only the
  // recipients the contacts read model knows are touched: the others would each cost a read of a
  // stream that does not exist.
  const touch = async (email: AcceptedData, contacts: Set<string>) => {
    await Promise.all(
      email.recipients
        .filter((r) => r.status === 'queued' && contacts.has(r.email.toLowerCase()))
        .map((r) => touchContact(ctx.commands, sender.actor, r.email.toLowerCase(), email.acceptedAt)),
    );
  };
  // A repeat touches again: the first call may have ended between the acceptance and its touches
  // (a read model late, the process gone), and a touch at the same time writes nothing twice.
  const replayed = async (state: EmailState) => {
    const email = await acceptedOf(ctx, stream, state);
    await touch(email, (await recipientsRead()).contacts);
    return { email, replayed: true };
  };
  if (input.emailId !== undefined) {
    const { state } = await loadState(ctx.commands, stream, emailAggregate);
    if (state.accepted) return replayed(state);
  }

  const body = target === null ? content : await translated(ctx, sender.actor, workspaceId, content, target, at);

  const { suppressed, contacts } = await recipientsRead();
  const accepted: AcceptedRecipient[] = (['to', 'cc', 'bcc'] as const).flatMap((kind) =>
    recipients[kind].map((r) => {
      const reason = suppressed.get(r.email.toLowerCase()) ?? null;
      return { email: r.email, kind, status: reason === null ? 'queued' : 'suppressed', reason } as const;
    }),
  );

  const messageId = `${randomUUID()}@${from.domain}`;
  const box = (m: Mailbox) => (m.name ? { address: m.email, name: m.name } : { address: m.email });
  const signed = withSignature(body, signature?.html ?? null, sending.renderer);
  // A link names one recipient: a message to several would let each unsubscribe the one named.
  const only = accepted.length === 1 ? accepted[0]! : null;
  const listUnsubscribe =
    lane === 'broadcast' && only
      ? {
          url: await sending.unsubscribeLinks.url({
            partition,
            email: only.email,
            audienceId: input.broadcast?.audienceId ?? null,
            emailId,
          }),
        }
      : undefined;
  const html =
    signed.html !== undefined && from.trackingHost !== null
      ? await tracked(sending, signed.html, from.trackingHost, partition, emailId, only?.email ?? '')
      : signed.html;
  const { raw } = await sending.compose({
    messageId: `<${messageId}>`,
    date: now,
    from: box(mailbox),
    to: recipients.to.map(box),
    cc: recipients.cc.map(box),
    bcc: recipients.bcc.map(box),
    replyTo: replyTo.map(box),
    subject: signed.subject,
    ...(signed.text !== undefined ? { text: signed.text } : {}),
    ...(html !== undefined ? { html } : {}),
    attachments,
    headers,
    ...(inReplyTo !== null ? { inReplyTo: `<${inReplyTo}>` } : {}),
    references: [...new Set([...references, ...(inReplyTo !== null ? [inReplyTo] : [])])].map((r) => `<${r}>`),
    ...(listUnsubscribe ? { listUnsubscribe } : {}),
  });
  const blob = await sending.blobs.put(raw);

  // Test mail never leaves the machine, and a message with nobody to send to sends nothing: neither counts.
  if (sender.mode === 'live' && accepted.some((r) => r.status === 'queued'))
    await reserveSend(ctx.commands, workspaceId, sending.monthlyAllowance, at);

  const data: AcceptedData = {
    emailId,
    messageId,
    from: { addressId: from.id, domainId: from.domainId, email: from.address, name: mailbox.name },
    replyTo: replyTo.map((r) => r.email),
    subject: signed.subject,
    recipients: accepted,
    stream: lane,
    tags,
    raw: { sha256: blob.sha256, size: blob.size },
    template: content.template,
    signatureId: signature?.id ?? null,
    inReplyTo,
    scheduledAt,
    mode: sender.mode,
    source: sender.source,
    ...(input.broadcast ? { broadcastId: input.broadcast.id } : {}),
    acceptedAt: at,
  };
  const { events, state } = await execute(
    ctx.commands,
    sender.actor,
    stream,
    emailAggregate,
    (s) => decideAcceptEmail(s, data),
    // A given id was read just above and not accepted then: a second read would find the same.
    { likelyNew: true },
  );
  if (events.length === 0) return replayed(state);
  await touch(data, contacts);
  return { email: data, replayed: false };
}

/**
 * The html with its links through the tracking host and an open pixel. One body goes to every
 * recipient, so the tokens name the recipient only when there is one; for several they name the
 * message alone (recipient ''), and opens and clicks count for the message.
 */
async function tracked(
  sending: SendingPorts,
  html: string,
  host: string,
  partition: string,
  emailId: string,
  recipient: string,
): Promise<string> {
  const sign = await sending.trackingLinks.signer(partition, emailId, recipient);
  return trackHtml(html, {
    pixel: `https://${host}${OPEN_PATH}${sign.open()}`,
    click: (url) => `https://${host}${CLICK_PATH}${sign.click(url)}`,
    keep: (url) => sending.unsubscribeLinks.isLink(url),
  });
}

/** The content in the target language; a template's translated html is sanitised as its own was. */
async function translated(
  ctx: SendContext,
  actor: Actor,
  workspaceId: string,
  content: Content,
  target: TranslationTarget,
  at: string,
): Promise<Content> {
  const parts = await translateSpending(ctx.commands, ctx.sending.ai, actor, workspaceId, content, target, at);
  // A template's html was sanitised when published; its translation is the model's markup.
  const html =
    parts.html !== undefined && content.template !== null ? ctx.commands.sanitiseHtml(parts.html) : parts.html;
  return { ...content, ...parts, ...(html !== undefined ? { html } : {}) };
}

/** Cancels a scheduled message before its time (409 `email_not_cancellable` otherwise). */
export async function cancelEmail(
  ctx: CommandContext,
  actor: Actor,
  emailId: string,
  now: string,
): Promise<{ cancelled: boolean }> {
  const { events } = await execute(ctx, actor, emailStream(actor.workspaceId, emailId), emailAggregate, (s) =>
    decideCancelEmail(s, { now }),
  );
  return { cancelled: events.length > 0 };
}

/**
 * The lane a send goes out on. Automations and broadcasts mail contacts in numbers on the
 * workspace's initiative: marketing, whose bounce and complaint rates differ from the mail people
 * ask for (receipts, resets, replies). Apart, a paused broadcast lane never stops those.
 */
export function streamOf(source: SendSource): SendingStream {
  return source === 'automation' || source === 'broadcast' ? 'broadcast' : 'transactional';
}

async function acceptedOf(ctx: SendContext, stream: string, state: EmailState): Promise<AcceptedData> {
  const recorded = await ctx.commands.store.readStream(stream);
  const first = recorded[0];
  if (!first || !state.accepted) throw new Error(`email stream ${stream} has no acceptance`);
  return ctx.commands.registry.decode(first.type, first.version, first.data).data as AcceptedData;
}

/** A read started now and awaited later: a refusal in between must not leave its failure unhandled. */
function settled<T>(read: Promise<T>): () => Promise<T> {
  read.catch(() => {});
  return () => read;
}

/** `from` parsed, and within what the caller reaches (a refusal that needs no read). */
function reachedMailbox(sender: Sender, fromInput: string): Mailbox {
  const mailbox = parseMailbox(fromInput);
  if (!mailbox) fail('invalid_email_address', `${JSON.stringify(fromInput)} is not an email address.`, 'from');
  const address = mailbox.email.toLowerCase();
  const reach = sender.reach;
  if (reach !== null && !reach.addresses.includes(address) && !reach.domains.includes(address.split('@')[1]!))
    forbidden(address);
  if (!sendsFrom(sender.viewOnly ?? null, address))
    fail(
      'from_address_forbidden',
      `This caller cannot send as ${address}: the person's grant of it is \`viewer\`, which reads but does not send.`,
      'from',
    );
  return mailbox;
}

function forbidden(address: string): never {
  fail('from_address_forbidden', `This caller cannot send as ${address}: it is not an address it reaches.`, 'from');
}

/** The sending address as the read model has it: of the workspace (else 403), enabled (else 409). */
function senderAddress(mailbox: Mailbox, row: SenderAddress | undefined): SenderAddress {
  const address = mailbox.email.toLowerCase();
  if (!row) return forbidden(address);
  if (!row.enabled) fail('address_disabled', `${address} is disabled; enable it to send from it.`, 'from');
  return row;
}

function checkHeaders(headers: Record<string, string>): Record<string, string> {
  const names = Object.keys(headers);
  if (names.length > HEADERS_MAX) fail('invalid_parameter', `At most ${HEADERS_MAX} headers.`, 'headers');
  const problem = checkCustomHeaders(headers);
  if (problem?.reason === 'reserved_header')
    fail('reserved_header', `${problem.name} is set by the service and cannot be given.`, `headers.${problem.name}`);
  if (problem?.reason === 'invalid_name')
    fail('invalid_parameter', 'A header name is printable ASCII without a colon.', `headers.${problem.name}`);
  if (problem?.reason === 'invalid_value')
    fail('invalid_parameter', 'A header value is one line.', `headers.${problem.name}`);
  const long = names.find((n) => headers[n]!.length > HEADER_VALUE_MAX);
  if (long !== undefined) fail('invalid_parameter', `At most ${HEADER_VALUE_MAX} characters.`, `headers.${long}`);
  return headers;
}

function checkTags(tags: { name: string; value: string }[]) {
  if (tags.length > TAGS_MAX) fail('invalid_parameter', `At most ${TAGS_MAX} tags.`, 'tags');
  tags.forEach((tag, i) => {
    for (const part of ['name', 'value'] as const)
      if (!TAG_PART.test(tag[part]))
        fail('invalid_parameter', '1 to 256 of letters, digits, `_` and `-`.', `tags.${i}.${part}`);
  });
  return tags.map(({ name, value }) => ({ name, value }));
}

interface Content {
  subject: string;
  text?: string;
  html?: string;
  template: AcceptedData['template'];
}

async function contentOf(sending: SendingPorts, workspaceId: string, input: SendInput): Promise<Content> {
  const subject = input.subject?.replace(/[\r\n]+/g, ' ');
  if (subject !== undefined && subject.length > SUBJECT_MAX)
    fail('invalid_parameter', `At most ${SUBJECT_MAX} characters.`, 'subject');
  for (const part of ['text', 'html'] as const)
    if ((input[part]?.length ?? 0) > BODY_MAX) fail('invalid_parameter', `At most ${BODY_MAX} characters.`, part);
  if (!input.template) {
    if (subject === undefined || subject.trim() === '')
      fail('invalid_parameter', 'A subject is needed (or a template).', 'subject');
    if (!input.text && !input.html) fail('invalid_parameter', 'Give `text`, `html` or both (or a template).', 'text');
    return { subject, text: input.text || undefined, html: input.html || undefined, template: null };
  }
  if (input.text !== undefined || input.html !== undefined)
    fail('invalid_parameter', 'A template gives the body; send `text` and `html` only without one.', 'template');
  const template = await sending.lookups.template(workspaceId, input.template.id);
  if (!template) fail('template_not_found', 'No template of the workspace has this id or slug.', 'template.id');
  const number = sendableVersion(template);
  const version = await sending.lookups.templateVersion(template.id, number);
  if (!version) throw new Error(`template ${template.id} has no version ${number}`);
  let rendered: Awaited<ReturnType<typeof renderVersion>>;
  try {
    rendered = await renderVersion(sending.renderer, version, template.revision, {
      props: input.template.looseProps ? declaredOnly(version, input.template.props) : input.template.props,
    });
  } catch (error) {
    if (error instanceof DomainError) throw new DomainError(error.code, error.message, `template.${error.param}`);
    throw error;
  }
  return {
    subject: subject ?? rendered.subject,
    text: rendered.text,
    html: rendered.html,
    template: { id: template.id, versionId: version.id },
  };
}

function declaredOnly(version: RenderableVersion, props: Record<string, unknown> | undefined) {
  const declared = new Set(version.props.map((p) => String(p.name)));
  return Object.fromEntries(Object.entries(props ?? {}).filter(([name]) => declared.has(name)));
}

async function signatureOf(
  lookups: SendLookups,
  workspaceId: string,
  from: SenderAddress,
  signatureId: string | undefined,
  inReplyTo: string | null,
): Promise<SignatureForSend | null> {
  if (signatureId === undefined) return inReplyTo !== null ? from.defaults.replies : from.defaults.newMail;
  const owners = [from.id, catchAllOwner(from.domainId)];
  const signature = await lookups.signature(workspaceId, signatureId);
  if (!signature || !owners.includes(signature.owner))
    fail('invalid_parameter', 'No signature of the sending address (or its catch-all) has this id.', 'signatureId');
  return signature;
}

/** The signature below the body: in the html before `</body>`, and as text after the RFC 3676 `-- ` line. */
function withSignature(content: Content, signature: string | null, renderer: TemplateRenderer): Content {
  if (signature === null) return content;
  const text = renderer.plainText(signature).trim();
  const block = `<div class="signature">${signature}</div>`;
  const html =
    content.html === undefined
      ? undefined
      : /<\/body>/i.test(content.html)
        ? content.html.replace(/<\/body>/i, `${block}</body>`)
        : `${content.html}${block}`;
  return {
    ...content,
    html,
    text: content.text === undefined ? undefined : `${content.text}\n\n-- \n${text}`,
  };
}

type AttachmentPart = NonNullable<MessageToCompose['attachments']>[number];

/** A part named by `fileId`, read once the input is checked (`withFiles`). */
interface FilePart {
  index: number;
  fileId: string;
  filename?: string;
  contentType?: string;
  contentId?: string;
}

/** The shapes of the attachments: decoded content, or the files to read; no read yet. */
function checkAttachments(attachments: AttachmentInput[]): (AttachmentPart | FilePart)[] {
  if (attachments.length > ATTACHMENTS_MAX)
    fail('invalid_parameter', `At most ${ATTACHMENTS_MAX} attachments.`, 'attachments');
  let total = 0;
  return attachments.map((a, i) => {
    if (
      a.filename !== undefined &&
      (a.filename.length === 0 || a.filename.length > 255 || FILENAME_UNSAFE.test(a.filename))
    )
      fail(
        'invalid_parameter',
        '1 to 255 characters, without quotes, slashes or line breaks.',
        `attachments.${i}.filename`,
      );
    const contentId = a.contentId !== undefined ? { contentId: a.contentId } : {};
    if (a.fileId !== undefined) {
      if (a.content !== undefined)
        fail('invalid_parameter', 'Give `content` or `fileId`, not both.', `attachments.${i}.content`);
      return { index: i, fileId: a.fileId, filename: a.filename, contentType: a.contentType, ...contentId };
    }
    if (a.content === undefined)
      fail('invalid_parameter', 'Give `content` (base64) or `fileId`.', `attachments.${i}.content`);
    if (a.filename === undefined)
      fail('invalid_parameter', 'A file name goes with `content`.', `attachments.${i}.filename`);
    const encoded = a.content.replace(/\s+/g, '');
    if (encoded.length % 4 !== 0 || !BASE64.test(encoded))
      fail('invalid_parameter', 'The content is base64.', `attachments.${i}.content`);
    const content = Buffer.from(encoded, 'base64');
    total += content.length;
    if (total > ATTACHMENTS_BYTES_MAX) tooManyBytes();
    return { filename: a.filename, content, contentType: a.contentType ?? 'application/octet-stream', ...contentId };
  });
}

function tooManyBytes(): never {
  fail('invalid_parameter', `At most ${ATTACHMENTS_BYTES_MAX} bytes of attachments in all, decoded.`, 'attachments');
}

/**
 * The parts with every `fileId` read: a file of the partition that the sender reaches (an upload
 * of the whole workspace only for a sender reaching all of it), else 422 on its `fileId`. Its
 * bytes count towards the message's total.
 */
async function withFiles(
  sending: SendingPorts,
  sender: Sender,
  parts: (AttachmentPart | FilePart)[],
): Promise<AttachmentPart[]> {
  if (!parts.some((p) => 'fileId' in p)) return parts as AttachmentPart[];
  const partition = sender.actor.workspaceId;
  const read = await Promise.all(
    parts.map(async (part) => {
      if (!('fileId' in part)) return part;
      const file = await sending.lookups.file(partition, part.fileId);
      const reached =
        file !== undefined &&
        (sender.reach === null ||
          (file.address !== null &&
            (sender.reach.domains.includes(file.domain ?? '') ||
              (!file.address.startsWith('*@') && sender.reach.addresses.includes(file.address)))));
      const content = reached ? await sending.blobs.get(file.sha256) : null;
      if (!file || !content)
        fail('invalid_parameter', 'No file the caller reaches has this id.', `attachments.${part.index}.fileId`);
      return {
        filename: part.filename ?? file.filename ?? 'attachment',
        content,
        contentType: part.contentType ?? file.contentType,
        ...(part.contentId !== undefined ? { contentId: part.contentId } : {}),
      };
    }),
  );
  if (read.reduce((sum, p) => sum + p.content.length, 0) > ATTACHMENTS_BYTES_MAX) tooManyBytes();
  return read;
}
