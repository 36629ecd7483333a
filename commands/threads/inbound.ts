import type { Readable } from 'node:stream';
import { checkAddress } from '../../domain/addresses/address.ts';
import type { Authentication } from '../../domain/messages/authentication.ts';
import { spamVerdict } from '../../domain/messages/spam.ts';
import type { MessageSummary } from '../../domain/messages/summary.ts';
import type { Mailbox } from '../../domain/threads/events.ts';
import type {
  DeliveryVerdict,
  InboundHandler,
  InboundMessage,
  RecipientPolicy,
  RecipientQuestion,
  RecipientVerdict,
} from '../../infra/inbound/port.ts';
import type { SpamFilter } from '../../infra/spam/port.ts';
import type { TextIndex } from '../../infra/search/port.ts';
import { factsOf } from '../../domain/rules/evaluate.ts';
import type { CommandContext } from '../execute.ts';
import { applyRules, evaluateMailbox, recordRejection, rejectionOf, type RuleRunPorts } from '../rules/run.ts';
import { type FilingLookups, fileMessage, lookUpArrival } from './handlers.ts';

/**
 * The inbound SMTP listener's policy and handler, as a list of routes: each route says which
 * recipients are its own (at RCPT) and what becomes of a message for them (at the end of DATA).
 * The first route that claims a recipient takes it; one nobody claims is refused 550.
 *
 * Return-path mail (DSNs and feedback reports addressed to `<emailId>@<returnPathName(domain)>`,
 * processes/emails/worker.ts) is a route of its own, put before `mailboxRoute` in the list
 * `startInbound` (system.ts) builds: its recipients are on `bounces.<domain>` names, never an
 * address or a catch-all, so the order only saves the mailbox lookup.
 */
export interface InboundRoute<R> {
  /** Names the route in errors. */
  name: string;
  /** This route's verdict on a recipient (its address normalised), or null when it is not one of its. */
  claim(question: RecipientQuestion, address: string): Promise<RecipientVerdict<R> | null>;
  receive(message: InboundMessage<unknown>, recipients: { address: string; recipient: R }[]): Promise<DeliveryVerdict>;
}

/** A recipient as the listener carries it: the route that took it, and what the route resolved. */
export type RoutedRecipient = { route: number; value: unknown };

const NO_MAILBOX = { accept: false as const, code: 550, message: 'No such mailbox here' };

/**
 * The address a recipient is filed under: lower case, the domain in punycode, a subaddress
 * (`name+tag@`) reaching its address (domain/addresses/address.ts). Null when it cannot be one of ours.
 */
export function recipientAddress(rcpt: string): string | null {
  const at = rcpt.lastIndexOf('@');
  if (at < 1) return null;
  const local = rcpt.slice(0, at);
  const plus = local.indexOf('+');
  const checked = checkAddress(`${plus > 0 ? local.slice(0, plus) : local}@${rcpt.slice(at + 1)}`);
  return checked.ok ? checked.address : null;
}

/**
 * A route as the list holds it: what it resolves is its own business (the list hands each route
 * back only the recipients it claimed), so the list forgets the type.
 */
export const anyRoute = <R>(route: InboundRoute<R>) => route as unknown as InboundRoute<unknown>;

export function routeInbound(routes: InboundRoute<unknown>[]): {
  policy: RecipientPolicy<RoutedRecipient>;
  handler: InboundHandler<RoutedRecipient>;
} {
  return {
    policy: {
      async accept(question) {
        const address = recipientAddress(question.address);
        if (address === null) return NO_MAILBOX;
        for (const [index, route] of routes.entries()) {
          const verdict = await route.claim(question, address);
          if (verdict === null) continue;
          if (!verdict.accept) return verdict;
          return { accept: true, recipient: { route: index, value: verdict.recipient } };
        }
        return NO_MAILBOX;
      },
    },
    handler: {
      // One answer to DATA for every recipient: the first refusal, else 250.
      async receive(message) {
        const verdicts: DeliveryVerdict[] = [];
        for (const [index, route] of routes.entries()) {
          const mine = message.recipients
            .filter((r) => r.recipient.route === index)
            .map((r) => ({ address: r.address, recipient: r.recipient.value }));
          if (mine.length > 0) verdicts.push(await route.receive(message, mine));
        }
        return verdicts.find((v) => !v.accept) ?? { accept: true };
      },
    },
  };
}

/** Where mail for an address is filed, as the read models say now. */
export type MailboxLookup = (address: string) => Promise<(Mailbox & { workspaceId: string }) | undefined>;

export interface MailboxPorts {
  commands: CommandContext;
  lookups: FilingLookups & { mailbox: MailboxLookup };
  texts: TextIndex;
  /** SPF, DKIM, DMARC and ARC (infra/inbound/authenticate.ts) of the stored message. */
  authenticate(raw: Readable, envelope: { ip: string; helo: string; mailFrom: string }): Promise<Authentication>;
  /** The summary and the body's text (infra/inbound/summary.ts), attachments into the blob store. */
  parse(raw: Readable, size: number): Promise<{ summary: MessageSummary; searchText: string }>;
  /** `SPAM_FILTER_URL`'s filter; null: the verdict rests on authentication alone. */
  spamFilter: SpamFilter | null;
  /** The mailboxes' rules (commands/rules/run.ts). */
  rules: RuleRunPorts;
}

/** A reject's own text as an SMTP reply line: printable ASCII, short. */
const rejectText = (value: string | null) =>
  value
    ?.replace(/[^\x20-\x7e]/g, '')
    .trim()
    .slice(0, 200) || 'Message rejected by a rule of the recipient';

type MailboxRecipient = Mailbox & { workspaceId: string };

async function bytesOf(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/**
 * Mail for the enabled addresses of verified domains, and for their catch-alls where on: one
 * `MessageReceived` per mailbox (two recipients reaching one catch-all file it once). The
 * message is authenticated, parsed and judged once, then filed in each mailbox's thread.
 */
export function mailboxRoute(ports: MailboxPorts): InboundRoute<MailboxRecipient> {
  return {
    name: 'mailbox',
    async claim(_question, address) {
      const mailbox = await ports.lookups.mailbox(address);
      if (mailbox === undefined) return null;
      return { accept: true, recipient: mailbox };
    },
    async receive(message, recipients) {
      const envelope = { ip: message.client.address, helo: message.client.helo, mailFrom: message.mailFrom };
      const [authentication, parsed, filter] = await Promise.all([
        ports.authenticate(await message.open(), envelope),
        ports.parse(await message.open(), message.blob.size),
        ports.spamFilter
          ? message.open().then(async (stream) =>
              ports.spamFilter!.check({
                raw: await bytesOf(stream),
                ...envelope,
                rcptTo: recipients.map((r) => r.address),
                queueId: message.id,
              }),
            )
          : null,
      ]);
      const spam = spamVerdict(authentication, filter);
      // The body's words are in the text index before the message is filed: the threads read model
      // reads them into the thread's search as it files the message (projections/threads/filing.ts).
      const text = ports.texts.put(message.blob.sha256, parsed.searchText);
      const mailboxes = new Map<string, { mailbox: MailboxRecipient; rcptTo: string[] }>();
      for (const { address, recipient } of recipients) {
        const key = `${recipient.workspaceId} ${recipient.address}`;
        const entry = mailboxes.get(key) ?? { mailbox: recipient, rcptTo: [] };
        entry.rcptTo.push(address);
        mailboxes.set(key, entry);
      }
      // Rules are evaluated before anything is filed: a matching `reject` answers DATA with 550
      // for the whole message, so no mailbox keeps a message its sender was told was refused.
      const now = message.receivedAt.toISOString();
      const facts = factsOf(parsed.summary, { mailFrom: message.mailFrom, spam: spam.spam });
      const runs = ports.rules;
      // What filing reads is looked up beside the rules, not after them: a round trip less before
      // the append. Threads change only by appends, none of which the rules make before filing.
      const [evaluations] = await Promise.all([
        Promise.all(
          [...mailboxes.values()].map(async (entry) => {
            const { workspaceId, address } = entry.mailbox;
            const [evaluation, known] = await Promise.all([
              evaluateMailbox(runs, workspaceId, address, facts, now),
              lookUpArrival(ports.lookups, workspaceId, address, { summary: parsed.summary, receivedAt: now }),
            ]);
            return { ...entry, evaluation, known };
          }),
        ),
        text,
      ]);
      const rejection = evaluations.map((e) => rejectionOf(e.evaluation)).find((r) => r !== null);
      if (rejection) {
        const recorded = { headerMessageId: parsed.summary.messageId, mailFrom: message.mailFrom };
        await Promise.all(
          evaluations.map(({ mailbox, evaluation }) =>
            recordRejection(runs, mailbox.workspaceId, mailbox.address, evaluation, recorded, now),
          ),
        );
        return { accept: false, code: 550, message: rejectText(rejection.action.value) };
      }
      // Each mailbox files in threads of its own: all at once, so a message to several waits on
      // one filing, and the projector takes their arrivals as one run.
      const filing = evaluations.map(async ({ mailbox, rcptTo, evaluation, known }) => {
        const { workspaceId, ...box } = mailbox;
        const arriving = {
          mailFrom: message.mailFrom,
          rcptTo,
          client: { ip: message.client.address, helo: message.client.helo },
          raw: { sha256: message.blob.sha256, size: message.blob.size },
          summary: parsed.summary,
          authentication,
          spam,
          receivedAt: now,
        };
        const filed = await fileMessage(ports.commands, ports.lookups, workspaceId, box, arriving, known);
        // A message filed already (a repeated delivery) ran its rules the first time.
        if (filed)
          await applyRules(
            runs,
            workspaceId,
            box,
            evaluation,
            {
              ...filed,
              headerMessageId: parsed.summary.messageId,
              subject: parsed.summary.subject,
              references: parsed.summary.references.length > 0 ? parsed.summary.references : parsed.summary.inReplyTo,
              mailFrom: message.mailFrom,
              // Claimed at RCPT through recipientAddress, so it normalises.
              recipient: recipientAddress(rcptTo[0]!)!,
              rawSha256: message.blob.sha256,
              facts,
            },
            now,
          );
      });
      await Promise.all(filing);
      return { accept: true };
    },
  };
}
