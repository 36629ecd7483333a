import { createHash } from 'node:crypto';

/**
 * What follows an id's prefix: 24 hex digits (12 random bytes, or a digest), 24 base-36
 * characters (api keys: they travel inside the token, so no `_`), or a UUID (the spec's
 * suppression and domain ids).
 */
type Body = 'hex24' | 'base36x24' | 'uuid';

/**
 * Every id kind of the service, one line each: its prefix, its body, and whether commands draw it
 * at random or it follows from a digest of what it names (so a replay of the log names it again).
 * Patterns are derived below; the random ids are drawn by commands/ids.ts from this same table.
 * The table is here, in the shared kernel, because the shapes are the spec's and every layer
 * checks them; drawing is not, so a decider can only ever receive an id through its command.
 */
export const ID_KINDS = {
  workspace: { prefix: 'ws_', body: 'hex24', from: 'random' },
  user: { prefix: 'usr_', body: 'hex24', from: 'random' },
  role: { prefix: 'role_', body: 'hex24', from: 'random' },
  apiKey: { prefix: '', body: 'base36x24', from: 'random' },
  template: { prefix: 'tpl_', body: 'hex24', from: 'random' },
  templateVersion: { prefix: 'tplv_', body: 'hex24', from: 'random' },
  address: { prefix: 'addr_', body: 'hex24', from: 'random' },
  addressForward: { prefix: 'fwd_', body: 'hex24', from: 'random' },
  appPassword: { prefix: 'apw_', body: 'hex24', from: 'random' },
  signature: { prefix: 'sig_', body: 'hex24', from: 'random' },
  suppression: { prefix: '', body: 'uuid', from: 'random' },
  unsubscribe: { prefix: 'uns_', body: 'hex24', from: 'random' },
  webhookEndpoint: { prefix: 'whe_', body: 'hex24', from: 'random' },
  webhookTest: { prefix: '', body: 'uuid', from: 'random' },
  webhookDelivery: { prefix: 'whd_', body: 'hex24', from: 'digest' },
  /** The delivery's digest under its own prefix (processes/webhooks/dispatch.ts writes it in SQL). */
  webhookMessage: { prefix: 'msg_', body: 'hex24', from: 'digest' },
  contact: { prefix: 'con_', body: 'hex24', from: 'random' },
  audience: { prefix: 'aud_', body: 'hex24', from: 'random' },
  contactEvent: { prefix: 'cev_', body: 'hex24', from: 'random' },
  automation: { prefix: 'aut_', body: 'hex24', from: 'random' },
  automationRun: { prefix: 'aur_', body: 'hex24', from: 'digest' },
  automationSend: { prefix: 'asr_', body: 'hex24', from: 'digest' },
  request: { prefix: 'req_', body: 'hex24', from: 'random' },
  /** The spec's domain ids are UUIDs. */
  domain: { prefix: '', body: 'uuid', from: 'random' },
  /** A DKIM key pair of a domain; its private half is in the secret vault under this id, never in an event. */
  dkimKey: { prefix: 'dkim_', body: 'hex24', from: 'random' },
  /** A sent message (POST /emails and every other way in); its stream is domain/emails/events.ts `emailStream`. */
  email: { prefix: 'em_', body: 'hex24', from: 'random' },
  broadcast: { prefix: 'bc_', body: 'hex24', from: 'random' },
  /** The email of one broadcast recipient: a digest of broadcast and contact, so a resumed start never sends twice. */
  broadcastEmail: { prefix: 'em_', body: 'hex24', from: 'digest' },
  /** A conversation in one mailbox (domain/threads). */
  thread: { prefix: 'thr_', body: 'hex24', from: 'random' },
  /** A message filed in a thread (arriving mail); `msg_` is the webhook deliveries'. */
  message: { prefix: 'mes_', body: 'hex24', from: 'random' },
  /** A custom label of one mailbox (domain/labels); system labels are named by their names. */
  label: { prefix: 'lbl_', body: 'hex24', from: 'random' },
  /** A rule of a mailbox (domain/rules). */
  rule: { prefix: 'rul_', body: 'hex24', from: 'random' },
  /** One arriving message's run of a mailbox's rules. */
  ruleRun: { prefix: 'rrn_', body: 'hex24', from: 'random' },
  /** An uploaded file (domain/files). */
  file: { prefix: 'fil_', body: 'hex24', from: 'random' },
  /** An attachment of a received message as a file: a digest of message and position, so a rebuild names it again. */
  attachmentFile: { prefix: 'fil_', body: 'hex24', from: 'digest' },
  /** A message being written (domain/drafts). */
  draft: { prefix: 'drf_', body: 'hex24', from: 'random' },
  /** The email a draft is sent as: a digest of the draft, so a retried send never sends twice. */
  draftEmail: { prefix: 'em_', body: 'hex24', from: 'digest' },
  /** An invitation to a workspace (domain/members). */
  invitation: { prefix: 'inv_', body: 'hex24', from: 'random' },
  /** An import from another sending provider (domain/provider-imports). */
  providerImport: { prefix: 'pim_', body: 'hex24', from: 'random' },
  /** An import of old mail into one address (domain/mailbox-imports). */
  mailboxImport: { prefix: 'imp_', body: 'hex24', from: 'random' },
  /** A message filed by a mailbox import: a digest of import and place in it, so a resumed run can tell it filed it. */
  importedMessage: { prefix: 'mes_', body: 'hex24', from: 'digest' },
  /** A draft made by a mailbox import: a digest of import and place, so a resumed run makes it once. */
  importedDraft: { prefix: 'drf_', body: 'hex24', from: 'digest' },
  /** An attachment of an imported draft as a file: a digest of draft and position, as `attachmentFile`. */
  importedDraftFile: { prefix: 'fil_', body: 'hex24', from: 'digest' },
  /** A workspace export (domain/exports). */
  export: { prefix: 'exp_', body: 'hex24', from: 'random' },
  /** A disposable inbox (domain/temp-inboxes), of no workspace. */
  tempInbox: { prefix: 'tin_', body: 'hex24', from: 'random' },
  /** A message kept by a disposable inbox. */
  tempMessage: { prefix: 'tim_', body: 'hex24', from: 'random' },
  /** A task of a workspace (domain/tasks). */
  task: { prefix: 'tsk_', body: 'hex24', from: 'random' },
  /** A run of a task asked for (run now, arriving mail). */
  taskRun: { prefix: 'trn_', body: 'hex24', from: 'random' },
  /** A scheduled run of a task: a digest of task and slot, so a slot queued twice is one run. */
  scheduledTaskRun: { prefix: 'trn_', body: 'hex24', from: 'digest' },
  /** A run started by arriving mail: a digest of task and message, so a message starts a task once. */
  mailTaskRun: { prefix: 'trn_', body: 'hex24', from: 'digest' },
  /** A call of a task's run waiting for a person: a digest of run and call, so a call asks once. */
  taskApproval: { prefix: 'tap_', body: 'hex24', from: 'digest' },
} as const satisfies Record<string, { prefix: string; body: Body; from: 'random' | 'digest' }>;

export type IdKind = keyof typeof ID_KINDS;
export type RandomIdKind = { [K in IdKind]: (typeof ID_KINDS)[K]['from'] extends 'random' ? K : never }[IdKind];
type DigestIdKind = Exclude<IdKind, RandomIdKind>;

const BODY: Record<Body, string> = {
  hex24: '[0-9a-f]{24}',
  base36x24: '[0-9a-z]{24}',
  uuid: '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}',
};

/** The shape of each kind: a lookup checks it first, so a malformed id answers 404 without a query. */
export const idPatterns = Object.fromEntries(
  Object.entries(ID_KINDS).map(([kind, { prefix, body }]) => [kind, new RegExp(`^${prefix}${BODY[body]}$`)]),
) as Record<IdKind, RegExp>;

/** The id a digest of `text` gives: the same text names the same id, however often it is replayed. */
export const digestId = (kind: DigestIdKind, text: string) =>
  `${ID_KINDS[kind].prefix}${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
