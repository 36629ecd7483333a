import { z } from 'zod';
import { addToAudience, createContact, updateContact } from '../../commands/contacts/handlers.ts';
import { createDraft, sendDraft } from '../../commands/drafts/handlers.ts';
import type { SendingPorts } from '../../commands/emails/handlers.ts';
import type { Actor, CommandContext } from '../../commands/execute.ts';
import { updateThread } from '../../commands/threads/handlers.ts';
import { removeUnsubscribe, unsubscribe } from '../../commands/unsubscribes/handlers.ts';
import {
  attributesPatch,
  contactAttributes,
  contactEmail,
  contactName,
  contactNotes,
} from '../../domain/contacts/fields.ts';
import { GROWTH_DAYS_MAX } from '../../domain/audiences/decide.ts';
import { checkDraft } from '../../domain/drafts/rules.ts';
import { DomainError, fail } from '../../domain/shared/errors.ts';
import type { Permission } from '../../domain/shared/permissions.ts';
import type { RunError } from '../../domain/task-runs/events.ts';
import type { AUTONOMIES, TaskOwner, Toolkit } from '../../domain/tasks/events.ts';
import { ANALYTICS_DAYS_MAX, analyticsDate, analyticsPeriod } from '../../domain/templates/analytics.ts';
import { SETTABLE_LABELS } from '../../domain/threads/events.ts';
import { UNSUBSCRIBE_SOURCES, type UnsubscribeSource } from '../../domain/unsubscribes/events.ts';
import type { ToolDefinition } from '../../infra/ai/port.ts';

/**
 * What the tools read, from the read models (system.ts builds it from projections' queries), and
 * the authority a task's creator holds now.
 */
export interface TaskToolReads {
  /** Whether the task is still there (a deleted task's queued runs are not started). */
  taskExists(workspaceId: string, taskId: string): Promise<boolean>;
  /** The permissions the creator holds now; null when it holds none any more (revoked, expired, removed). */
  authority(workspaceId: string, owner: TaskOwner): Promise<readonly Permission[] | null>;
  threads(
    workspaceId: string,
    filter: { label?: string; unread?: boolean; q?: string },
    limit: number,
  ): Promise<ThreadBrief[]>;
  thread(workspaceId: string, threadId: string): Promise<(ThreadBrief & ThreadPlace & { messages: unknown[] }) | null>;
  /** The thread a filed message is in. */
  threadOfMessage(workspaceId: string, messageId: string): Promise<string | null>;
  labels(workspaceId: string, mailbox: string | undefined): Promise<{ id: string; name: string; mailbox: string }[]>;
  /** An address of the workspace that can write mail. */
  isMailbox(workspaceId: string, address: string): Promise<boolean>;
  contacts(workspaceId: string, q: string | undefined, limit: number): Promise<unknown[]>;
  contact(workspaceId: string, email: string): Promise<ContactBrief | null>;
  /** Sent mail, newest first, each with its recipients' standing. */
  sentEmails(workspaceId: string, filter: { from?: string }, limit: number): Promise<unknown[]>;
  /** One sent email as `GET /emails/{id}` shows it (each recipient's delivery status), without its history. */
  sentEmail(workspaceId: string, emailId: string): Promise<unknown | null>;
  /** A sent email's history, oldest first: attempts, deliveries, bounces, complaints, opens, clicks. */
  emailEvents(workspaceId: string, emailId: string): Promise<unknown[] | null>;
  /** Whether the workspace has this audience. */
  hasAudience(workspaceId: string, audienceId: string): Promise<boolean>;
  /** An address's standing: the contact it is, the unsubscribes that hold for it, its suppression. */
  subscription(workspaceId: string, email: string): Promise<Subscription>;
  audiences(workspaceId: string, limit: number): Promise<unknown[]>;
  /** The contacts in an audience now; null when the workspace has no such audience. */
  audienceContacts(workspaceId: string, audienceId: string, limit: number): Promise<unknown[] | null>;
  templates(workspaceId: string, search: string | undefined, limit: number): Promise<unknown[]>;
  /** A template by id or slug, with its published version's content. */
  template(workspaceId: string, idOrSlug: string): Promise<unknown | null>;
  /**
   * A template's analytics (by id or slug) over a period, as `GET /templates/{id}/analytics` answers
   * them; null when the workspace has no such template.
   */
  templateAnalytics(
    workspaceId: string,
    idOrSlug: string,
    period: { from: string; to: string },
  ): Promise<unknown | null>;
  /** Both sending lanes, their counts and rates over the window, as `GET /sending/streams` lists them. */
  sendingLanes(workspaceId: string): Promise<unknown[]>;
  /**
   * The growth of the workspace's audiences, or of one, over the last `days` (UTC days), as
   * `GET /audiences/growth` answers it; null when the workspace has no such audience.
   */
  audienceGrowth(workspaceId: string, audienceId: string | undefined, days: number): Promise<unknown | null>;
  /** Broadcasts, newest first, with their progress, as `GET /broadcasts` lists them. */
  broadcasts(workspaceId: string, limit: number): Promise<unknown[]>;
  /** The unsubscribes that hold, newest first, as `GET /suppressions/unsubscribes` lists them. */
  unsubscribes(
    workspaceId: string,
    filter: { audienceId?: string; source?: UnsubscribeSource },
    limit: number,
  ): Promise<unknown[]>;
  /** The attachments of a thread's messages; null when the workspace has no such thread. */
  attachments(workspaceId: string, threadId: string, limit: number): Promise<unknown[] | null>;
  /** What describes a file and, for a text type, the beginning of its text. */
  file(workspaceId: string, fileId: string): Promise<unknown | null>;
}

/** A contact as the tools tell it. */
export interface ContactBrief {
  email: string;
  name: string | null;
  notes: string | null;
  attributes: Record<string, string>;
  lastSeenAt: string | null;
}

/** What the read models know of an address's subscription (`unsubscribes`, `suppressions`). */
export interface Subscription {
  contactId: string | null;
  /** Audience null: unsubscribed from everything sent on the broadcast lane. */
  unsubscribes: { id: string; audienceId: string | null; source: UnsubscribeSource; createdAt: string }[];
  suppression: { reason: string; detail: string | null; createdAt: string } | null;
}

export interface ThreadBrief {
  id: string;
  mailbox: string;
  subject: string;
  labels: string[];
  unread: boolean;
  snippet: string;
  participants: string[];
  lastMessageAt: string;
}

/** Where a thread lives: what a change of its labels needs. */
export interface ThreadPlace {
  addressId: string | null;
  domainId: string;
}

export interface ToolContext {
  commands: CommandContext;
  /** The sending pipeline, as `POST /drafts/{id}/send` uses it. */
  sending: SendingPorts;
  reads: TaskToolReads;
  /** Writes are the run's: the system acting for the task (`id`: the run). */
  actor: Actor;
  workspaceId: string;
}

type Autonomy = (typeof AUTONOMIES)[number];

export type Effect = 'read' | 'organize' | 'send';

/**
 * Whether the task's autonomy lets the assistant make a call of this effect alone: `ask` makes
 * every write wait for a person, `organize` lets it make the writes nothing outside the workspace
 * sees (labels, filing, drafts, contacts and their notes, audience membership, subscriptions),
 * `reply` also send.
 */
export function needsApproval(autonomy: Autonomy, effect: Effect): boolean {
  if (effect === 'read') return false;
  if (autonomy === 'ask') return true;
  return effect === 'send' && autonomy !== 'reply';
}

interface Tool<A> {
  name: string;
  description: string;
  /** `mail`: every task has it (the scopes every task is created with); else the toolkits that offer it. */
  toolkit: Toolkit | 'mail' | readonly Toolkit[];
  /**
   * What it does, for the task's autonomy: a `read` changes nothing; an `organize` write changes
   * the workspace's own things (labels, filing, drafts, contacts, notes, audience membership,
   * subscriptions: nothing leaves the workspace); a `send` write sends mail. A write is recorded
   * as started before it is made, and never made twice.
   */
  effect: Effect;
  scopes: readonly Permission[];
  args: z.ZodType<A>;
  run(ctx: ToolContext, args: A): Promise<unknown>;
}

const tool = <A>(t: Tool<A>) => t as Tool<unknown>;
const id = (prefix: string) => z.string().regex(new RegExp(`^${prefix}[0-9a-z]{1,64}$`), `a ${prefix}… id`);
const limit = z.number().int().min(1).max(25).default(10);

/** Not found, as the model is told: a foreign id answers as a missing one. */
const missing = (what: string): never => fail('resource_not_found', `No such ${what}.`);

const contactOf = async (ctx: ToolContext, email: string) =>
  (await ctx.reads.contact(ctx.workspaceId, email)) ?? missing('contact');

const threadOf = async (ctx: ToolContext, threadId: string) =>
  (await ctx.reads.thread(ctx.workspaceId, threadId)) ?? missing('thread');

/**
 * An address's subscription as the model is told it: `subscribed` is to what the workspace sends
 * in numbers (broadcasts, automations), which an unsubscribe from everything stops; a suppression
 * stops every mail to the address, transactional too.
 */
async function standing(ctx: ToolContext, email: string) {
  const s = await ctx.reads.subscription(ctx.workspaceId, email);
  const all = s.unsubscribes.find((u) => u.audienceId === null);
  return {
    email,
    isContact: s.contactId !== null,
    subscribed: !all,
    unsubscribedSince: all?.createdAt ?? null,
    unsubscribes: [...s.unsubscribes]
      .sort((x, y) => x.createdAt.localeCompare(y.createdAt))
      .map((u) => ({
        id: u.id,
        audienceId: u.audienceId,
        source: u.source,
        since: u.createdAt,
        removable: u.source === 'api',
      })),
    suppressed: s.suppression && {
      reason: s.suppression.reason,
      detail: s.suppression.detail,
      since: s.suppression.createdAt,
    },
  };
}

/**
 * A change of an address's subscription, as `POST` or `DELETE /suppressions/unsubscribes` makes it
 * (those ask `settings:write`, the toolkit `contacts:write`: both are checked), from one audience or
 * from everything; answers the address's standing after.
 */
const subscriptionChange = (
  name: string,
  description: string,
  change: (ctx: ToolContext, email: string, audienceId: string | null, now: Subscription) => Promise<unknown>,
) =>
  tool({
    name,
    description,
    toolkit: 'subscriptions',
    effect: 'organize',
    scopes: ['contacts:write', 'settings:write'],
    args: z.strictObject({ email: contactEmail, audienceId: id('aud_').optional() }),
    run: async (ctx, a) => {
      if (a.audienceId !== undefined && !(await ctx.reads.hasAudience(ctx.workspaceId, a.audienceId)))
        fail('audience_not_found', 'No such audience.', 'audienceId');
      await change(ctx, a.email, a.audienceId ?? null, await ctx.reads.subscription(ctx.workspaceId, a.email));
      return standing(ctx, a.email);
    },
  });

/** Labels or files a thread, as `PATCH /threads/{id}` does, and answers its labels after. */
async function relabel(ctx: ToolContext, threadId: string, change: Parameters<typeof updateThread>[3]) {
  const thread = await threadOf(ctx, threadId);
  await updateThread(
    ctx.commands,
    ctx.actor,
    { id: thread.id, addressId: thread.addressId, domainId: thread.domainId },
    change,
    new Date().toISOString(),
  );
  const after = await threadOf(ctx, threadId);
  return { threadId: after.id, labels: after.labels };
}

/**
 * The tools, by the toolkit that offers them (docs/decisions/tasks.md). Each maps to our own
 * queries or commands; a write is checked by the command as a request's would be.
 */
const TOOLS: Tool<unknown>[] = [
  tool({
    name: 'list_threads',
    description: 'Lists the workspace’s mail threads, latest activity first.',
    toolkit: 'mail',
    effect: 'read',
    scopes: ['threads:read'],
    args: z.strictObject({
      label: z
        .enum([...SETTABLE_LABELS, 'sent'])
        .optional()
        .describe('Only threads under this system label.'),
      unread: z.boolean().optional(),
      q: z.string().max(200).optional().describe('Words of the subject, participants or text.'),
      limit,
    }),
    run: async (ctx, a) => ({ threads: await ctx.reads.threads(ctx.workspaceId, a, a.limit) }),
  }),
  tool({
    name: 'read_thread',
    description:
      'Reads one thread: its labels and its messages (sender, recipients, subject, date, snippet, and the text of the latest ones).',
    toolkit: 'mail',
    effect: 'read',
    scopes: ['threads:read'],
    args: z.strictObject({ threadId: id('thr_') }),
    run: async (ctx, a) => {
      const { addressId: _, domainId: __, ...thread } = await threadOf(ctx, a.threadId);
      return thread;
    },
  }),
  tool({
    name: 'list_labels',
    description: 'Lists the custom labels (id and name) of the workspace’s mailboxes, or of one.',
    toolkit: 'mail',
    effect: 'read',
    scopes: ['threads:read'],
    args: z.strictObject({ mailbox: z.string().max(320).optional().describe('An address of the workspace.') }),
    run: async (ctx, a) => ({ labels: await ctx.reads.labels(ctx.workspaceId, a.mailbox?.toLowerCase()) }),
  }),
  tool({
    name: 'label_thread',
    description: 'Puts custom labels (ids of the thread’s mailbox, `lbl_…`) on a thread or takes them off.',
    toolkit: 'mail',
    effect: 'organize',
    scopes: ['threads:write', 'labels:write'],
    args: z
      .strictObject({
        threadId: id('thr_'),
        add: z.array(id('lbl_')).max(10).default([]),
        remove: z.array(id('lbl_')).max(10).default([]),
      })
      .refine((a) => a.add.length + a.remove.length > 0, { message: 'add or remove at least one label' }),
    run: (ctx, a) => relabel(ctx, a.threadId, { add: a.add, remove: a.remove }),
  }),
  tool({
    name: 'file_thread',
    description: 'Files a thread under a system label: `inbox`, `archive`, `spam` or `trash`.',
    toolkit: 'mail',
    effect: 'organize',
    scopes: ['threads:write'],
    args: z.strictObject({ threadId: id('thr_'), label: z.enum(SETTABLE_LABELS) }),
    run: (ctx, a) => relabel(ctx, a.threadId, { label: a.label }),
  }),
  tool({
    name: 'create_draft',
    description: 'Saves a draft (not sent) from an address of the workspace; a reply names the message it answers.',
    toolkit: 'drafts',
    effect: 'organize',
    scopes: ['drafts:write'],
    args: z.strictObject({
      from: z.string().max(998).describe('An address of the workspace.'),
      to: z.array(z.string().max(998)).max(50).default([]),
      cc: z.array(z.string().max(998)).max(50).default([]),
      subject: z.string().max(998).optional(),
      text: z.string().max(100_000).optional(),
      inReplyTo: z.string().max(998).optional().describe('The Message-ID this draft answers.'),
    }),
    run: async (ctx, a) => {
      const input = {
        from: a.from,
        to: a.to,
        cc: a.cc,
        bcc: [],
        replyTo: [],
        subject: a.subject ?? null,
        text: a.text ?? null,
        html: null,
        attachments: [],
        inReplyTo: a.inReplyTo ?? null,
        references: a.inReplyTo ? [a.inReplyTo] : [],
      };
      const checked = checkDraft(input);
      if (checked.address.startsWith('*@') || !(await ctx.reads.isMailbox(ctx.workspaceId, checked.address)))
        fail('from_address_forbidden', `${checked.address} is not an address of the workspace.`, 'from');
      const draftId = await createDraft(
        ctx.commands,
        ctx.actor,
        { ...input, ...checked, signatureId: null, attachments: [] },
        [],
        new Date().toISOString(),
      );
      return { draftId };
    },
  }),
  tool({
    name: 'send_draft',
    description: 'Sends a draft of the workspace (as it stands), through the same checks as any send.',
    toolkit: 'sent',
    effect: 'send',
    scopes: ['emails:send', 'drafts:write'],
    args: z.strictObject({ draftId: id('drf_') }),
    run: async (ctx, a) => {
      const sent = await sendDraft(
        { commands: ctx.commands, sending: ctx.sending },
        { actor: ctx.actor, mode: 'live', reach: null, viewOnly: null, source: 'task' },
        a.draftId,
        new Date(),
      );
      return { emailId: sent.email.emailId, status: 'accepted' };
    },
  }),
  tool({
    name: 'find_contacts',
    description: 'Finds contacts by words of their address or name (all, most recently seen first, without words).',
    toolkit: 'contacts',
    effect: 'read',
    scopes: ['contacts:read'],
    args: z.strictObject({ q: z.string().max(200).optional(), limit }),
    run: async (ctx, a) => ({ contacts: await ctx.reads.contacts(ctx.workspaceId, a.q, a.limit) }),
  }),
  tool({
    name: 'read_contact',
    description: 'Reads one contact by email address: name, notes, attributes, when last seen.',
    toolkit: 'contacts',
    effect: 'read',
    scopes: ['contacts:read'],
    args: z.strictObject({ email: z.string().max(320) }),
    run: (ctx, a) => contactOf(ctx, a.email.trim().toLowerCase()),
  }),
  tool({
    name: 'create_contact',
    description: 'Adds a contact to the book (and its default audience), as `POST /contacts` does.',
    toolkit: 'contacts',
    effect: 'organize',
    scopes: ['contacts:write'],
    args: z.strictObject({
      email: contactEmail,
      name: contactName.optional(),
      notes: contactNotes.optional(),
      attributes: contactAttributes.optional(),
    }),
    run: async (ctx, a) => {
      const { created } = await createContact(
        ctx.commands,
        ctx.actor,
        {
          email: a.email,
          name: a.name ?? null,
          notes: a.notes ?? null,
          attributes: a.attributes ?? {},
          source: 'manual',
        },
        new Date().toISOString(),
      );
      if (!created) fail('contact_exists', 'The address is in the contact book already.', 'email');
      return contactOf(ctx, a.email);
    },
  }),
  tool({
    name: 'update_contact',
    description:
      'Changes a contact’s name or attributes (merged key by key; a null value removes the key); null clears the name.',
    toolkit: 'contacts',
    effect: 'organize',
    scopes: ['contacts:write'],
    args: z
      .strictObject({
        email: contactEmail,
        name: contactName.nullable().optional(),
        attributes: attributesPatch.optional(),
      })
      .refine((a) => a.name !== undefined || a.attributes !== undefined, { message: 'change name or attributes' }),
    run: async (ctx, a) => {
      const { email, ...patch } = a;
      await updateContact(ctx.commands, ctx.actor, email, patch, new Date().toISOString());
      return contactOf(ctx, email);
    },
  }),
  tool({
    name: 'read_notes',
    description: 'Reads the notes kept on a contact (by email address).',
    toolkit: 'notes',
    effect: 'read',
    scopes: ['contacts:read'],
    args: z.strictObject({ email: contactEmail }),
    run: async (ctx, a) => {
      const contact = await contactOf(ctx, a.email);
      return { email: contact.email, notes: contact.notes };
    },
  }),
  tool({
    name: 'set_notes',
    description: 'Replaces the notes kept on a contact (null clears them).',
    toolkit: 'notes',
    effect: 'organize',
    scopes: ['contacts:write'],
    args: z.strictObject({ email: contactEmail, notes: contactNotes.nullable() }),
    run: async (ctx, a) => {
      await updateContact(ctx.commands, ctx.actor, a.email, { notes: a.notes }, new Date().toISOString());
      const contact = await contactOf(ctx, a.email);
      return { email: contact.email, notes: contact.notes };
    },
  }),
  tool({
    name: 'read_subscription',
    description:
      'Whether an address is subscribed to what the workspace sends in numbers (broadcasts, automations): its ' +
      'unsubscribes (from everything, audienceId null, or from one audience; since when, how: one-click, preferences ' +
      'or api) and its suppression (bounce, complaint or manual: no mail at all reaches it).',
    toolkit: 'subscriptions',
    effect: 'read',
    scopes: ['contacts:read', 'settings:read'],
    args: z.strictObject({ email: contactEmail }),
    run: (ctx, a) => standing(ctx, a.email),
  }),
  tool({
    name: 'list_unsubscribed',
    description:
      'Lists the unsubscribes that hold, newest first: who left everything sent in numbers (audienceId `all`), or ' +
      'one audience, or any (without audienceId); by how (source).',
    toolkit: 'subscriptions',
    effect: 'read',
    scopes: ['contacts:read', 'settings:read'],
    args: z.strictObject({
      audienceId: z.union([z.literal('all'), id('aud_')]).optional(),
      source: z.enum(UNSUBSCRIBE_SOURCES).optional(),
      limit,
    }),
    run: async (ctx, a) => {
      if (a.audienceId?.startsWith('aud_') && !(await ctx.reads.hasAudience(ctx.workspaceId, a.audienceId)))
        fail('audience_not_found', 'No such audience.', 'audienceId');
      return { unsubscribes: await ctx.reads.unsubscribes(ctx.workspaceId, a, a.limit) };
    },
  }),
  subscriptionChange(
    'unsubscribe_contact',
    'Unsubscribes an address on its owner’s behalf (they asked, say by reply): from one audience, or from ' +
      'everything sent in numbers without audienceId. Transactional mail still goes. One already unsubscribed stays.',
    (ctx, email, audienceId, { contactId }) =>
      unsubscribe(ctx.commands, ctx.actor, { email, contactId, audienceId, source: 'api' }, new Date().toISOString()),
  ),
  subscriptionChange(
    'resubscribe_contact',
    'Takes back an unsubscribe the workspace recorded (source api), from one audience or from everything. What ' +
      'the recipient chose with their link or preferences page only they can undo.',
    async (ctx, email, audienceId, { unsubscribes }) => {
      const held = unsubscribes.find((u) => u.audienceId === audienceId);
      if (!held) fail('resource_not_found', 'The address is not unsubscribed from that.');
      await removeUnsubscribe(ctx.commands, ctx.actor, { unsubscribeId: held.id, email }, new Date().toISOString());
    },
  ),
  tool({
    name: 'list_sent_emails',
    description: 'Lists the workspace’s sent mail, newest first, with each recipient’s delivery status.',
    toolkit: 'sent',
    effect: 'read',
    scopes: ['emails:read'],
    args: z.strictObject({ from: z.string().max(320).optional().describe('The sending address.'), limit }),
    run: async (ctx, a) => ({
      emails: await ctx.reads.sentEmails(ctx.workspaceId, { from: a.from?.trim().toLowerCase() }, a.limit),
    }),
  }),
  tool({
    name: 'read_sent_email',
    description: 'Reads one sent email: sender, subject, status, and each recipient’s delivery status.',
    toolkit: 'sent',
    effect: 'read',
    scopes: ['emails:read'],
    args: z.strictObject({ emailId: id('em_') }),
    run: async (ctx, a) => (await ctx.reads.sentEmail(ctx.workspaceId, a.emailId)) ?? missing('email'),
  }),
  tool({
    name: 'list_email_events',
    description:
      'What happened to a sent email, oldest first: delivery attempts, deliveries, bounces, complaints, opens and clicks.',
    toolkit: ['tracking', 'insights'],
    effect: 'read',
    scopes: ['emails:read'],
    args: z.strictObject({ emailId: id('em_') }),
    run: async (ctx, a) => ({
      events: (await ctx.reads.emailEvents(ctx.workspaceId, a.emailId)) ?? missing('email'),
    }),
  }),
  tool({
    name: 'template_analytics',
    description:
      'What became of the mail sent with a template (by id or slug), per version and UTC day of sending, from `from` ' +
      'to `to` (dates, inclusive; default the last 30 days): recipients sent to, delivered, bounced, complained, ' +
      'opened, clicked, unsubscribed, with rates.',
    toolkit: 'insights',
    effect: 'read',
    scopes: ['templates:read'],
    args: z
      .strictObject({
        template: z.string().min(1).max(100).describe('A `tpl_` id or a slug.'),
        from: analyticsDate.optional(),
        to: analyticsDate.optional(),
      })
      .refine((a) => analyticsPeriod(a).days >= 1, { message: '`from` is after `to`', path: ['from'] })
      .refine((a) => analyticsPeriod(a).days <= ANALYTICS_DAYS_MAX, {
        message: `at most ${ANALYTICS_DAYS_MAX} days from \`from\` to \`to\``,
        path: ['from'],
      }),
    run: async (ctx, a) =>
      (await ctx.reads.templateAnalytics(ctx.workspaceId, a.template, analyticsPeriod(a))) ?? missing('template'),
  }),
  tool({
    name: 'sending_overview',
    description:
      'Both sending lanes (transactional, broadcast): recipients sent, hard bounces and complaints over the last ' +
      'days, their rates against the thresholds that pause a lane, and whether each is paused.',
    toolkit: 'insights',
    effect: 'read',
    scopes: ['settings:read'],
    args: z.strictObject({}),
    run: async (ctx) => ({ lanes: await ctx.reads.sendingLanes(ctx.workspaceId) }),
  }),
  tool({
    name: 'list_broadcasts',
    description:
      'Lists the broadcasts, newest first, with their progress: recipients taken, sent, failed, delivered, bounced, ' +
      'complained, opened, clicked, unsubscribed.',
    toolkit: 'insights',
    effect: 'read',
    scopes: ['emails:read'],
    args: z.strictObject({ limit }),
    run: async (ctx, a) => ({ broadcasts: await ctx.reads.broadcasts(ctx.workspaceId, a.limit) }),
  }),
  tool({
    name: 'audience_growth',
    description:
      'How the audiences (or one) grew over the last `days` (default 30): members before and now, joins ' +
      '(subscribed), leaves (unsubscribed) and the net change, per UTC day with any, and the busiest day.',
    toolkit: 'insights',
    effect: 'read',
    scopes: ['audiences:read'],
    args: z.strictObject({
      audienceId: id('aud_').optional(),
      days: z.number().int().min(1).max(GROWTH_DAYS_MAX).default(30),
    }),
    run: async (ctx, a) =>
      (await ctx.reads.audienceGrowth(ctx.workspaceId, a.audienceId, a.days)) ??
      fail('audience_not_found', 'No such audience.', 'audienceId'),
  }),
  tool({
    name: 'list_audiences',
    description: 'Lists the audiences (the default one, holding every contact, first), with their contact counts.',
    toolkit: 'audiences',
    effect: 'read',
    scopes: ['audiences:read'],
    args: z.strictObject({ limit }),
    run: async (ctx, a) => ({ audiences: await ctx.reads.audiences(ctx.workspaceId, a.limit) }),
  }),
  tool({
    name: 'list_audience_contacts',
    description: 'Lists the contacts in an audience, those that joined last first.',
    toolkit: 'audiences',
    effect: 'read',
    scopes: ['audiences:read', 'contacts:read'],
    args: z.strictObject({ audienceId: id('aud_'), limit }),
    run: async (ctx, a) => ({
      contacts: (await ctx.reads.audienceContacts(ctx.workspaceId, a.audienceId, a.limit)) ?? missing('audience'),
    }),
  }),
  tool({
    name: 'add_to_audience',
    description: 'Adds a contact (by email address) to an audience; one already in it stays.',
    toolkit: 'audiences',
    effect: 'organize',
    scopes: ['audiences:write'],
    args: z.strictObject({ audienceId: id('aud_'), email: contactEmail }),
    run: async (ctx, a) => {
      await addToAudience(ctx.commands, ctx.actor, a, new Date().toISOString());
      return { audienceId: a.audienceId, email: a.email, member: true };
    },
  }),
  tool({
    name: 'list_templates',
    description: 'Lists the templates (id, slug, name, status), most recently changed first.',
    toolkit: 'templates',
    effect: 'read',
    scopes: ['templates:read'],
    args: z.strictObject({ search: z.string().max(200).optional().describe('Words of the name or slug.'), limit }),
    run: async (ctx, a) => ({ templates: await ctx.reads.templates(ctx.workspaceId, a.search, a.limit) }),
  }),
  tool({
    name: 'read_template',
    description: 'Reads a template (by id or slug) and the content of its published version: subject, props, html.',
    toolkit: 'templates',
    effect: 'read',
    scopes: ['templates:read'],
    args: z.strictObject({ template: z.string().min(1).max(100).describe('A `tpl_` id or a slug.') }),
    run: async (ctx, a) => (await ctx.reads.template(ctx.workspaceId, a.template)) ?? missing('template'),
  }),
  tool({
    name: 'list_attachments',
    description: 'Lists the files attached to a thread’s messages (id, name, type, size).',
    toolkit: 'files',
    effect: 'read',
    scopes: ['files:read', 'threads:read'],
    args: z.strictObject({ threadId: id('thr_'), limit }),
    run: async (ctx, a) => ({
      files: (await ctx.reads.attachments(ctx.workspaceId, a.threadId, a.limit)) ?? missing('thread'),
    }),
  }),
  tool({
    name: 'read_file',
    description: 'Reads what describes a file and, for a text file, the beginning of its text.',
    toolkit: 'files',
    effect: 'read',
    scopes: ['files:read'],
    args: z.strictObject({ fileId: id('fil_') }),
    run: async (ctx, a) => (await ctx.reads.file(ctx.workspaceId, a.fileId)) ?? missing('file'),
  }),
];

/** The tools of a run: the mail ones, and those of the toolkits the run's settings name. */
export function toolsOf(toolkits: readonly Toolkit[]): Tool<unknown>[] {
  return TOOLS.filter((t) => t.toolkit === 'mail' || [t.toolkit].flat().some((k) => toolkits.includes(k)));
}

/** As the model is offered them: arguments as JSON Schema (what a request would send). */
export function definitionsOf(tools: readonly Tool<unknown>[]): ToolDefinition[] {
  return tools.map((t) => ({
    name: t.name,
    description: t.description,
    parameters: z.toJSONSchema(t.args, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>,
  }));
}

/** A tool's effect; an unknown tool reads (its call fails without doing anything). */
export const effectOf = (tools: readonly Tool<unknown>[], name: string): Effect =>
  tools.find((t) => t.name === name)?.effect ?? 'read';

/** Tool output past this is cut: the model is told it was. */
const RESULT_MAX = 20_000;

/**
 * One call, as the model asked for it: the tool found among the run's, the arguments parsed and
 * validated (untrusted input), the creator's current authority checked, then made. A refusal of
 * any of these, or of the command, is the call's error, which the model is told; only a fault of
 * ours (the database, a bug) throws.
 */
export async function callTool(
  ctx: ToolContext & { owner: TaskOwner; authority: readonly Permission[] },
  tools: readonly Tool<unknown>[],
  call: { name: string; arguments: string },
): Promise<{ result: string | null; error: RunError | null }> {
  const parsed = parseCall(tools, call);
  if ('error' in parsed) return { result: null, error: parsed.error };
  const { tool: t, args } = parsed;
  const lacking = t.scopes.filter((s) => !ctx.authority.includes(s));
  if (lacking.length > 0)
    return refused('insufficient_authority', `The task’s creator no longer holds ${lacking.join(', ')}.`);
  try {
    const out = JSON.stringify(await t.run(ctx, args));
    return {
      result: out.length > RESULT_MAX ? `${out.slice(0, RESULT_MAX)}… (cut at ${RESULT_MAX} characters)` : out,
      error: null,
    };
  } catch (error) {
    if (error instanceof DomainError) return refused(error.code, error.message);
    throw error;
  }
}

const refused = (code: string, message: string) => ({ result: null, error: { code, message } });

/** The call's tool and its arguments validated, or why the call cannot be made (told to the model). */
export function parseCall(
  tools: readonly Tool<unknown>[],
  call: { name: string; arguments: string },
): { tool: Tool<unknown>; args: unknown } | { error: RunError } {
  const t = tools.find((x) => x.name === call.name);
  if (!t)
    return { error: { code: 'unknown_tool', message: `No tool is named ${JSON.stringify(call.name)} in this run.` } };
  let raw: unknown;
  try {
    raw = call.arguments.trim() === '' ? {} : JSON.parse(call.arguments);
  } catch {
    return { error: { code: 'invalid_arguments', message: 'The arguments are not JSON.' } };
  }
  const parsed = t.args.safeParse(raw);
  if (!parsed.success)
    return {
      error: {
        code: 'invalid_arguments',
        message: parsed.error.issues.map((i) => `${i.path.join('.') || '(arguments)'}: ${i.message}`).join('; '),
      },
    };
  return { tool: t, args: parsed.data };
}
