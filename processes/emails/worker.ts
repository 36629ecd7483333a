import type pg from 'pg';
import { dkimPrivateKey, loadDomain } from '../../commands/domains/handlers.ts';
import { loadState, type Actor, type CommandContext } from '../../commands/execute.ts';
import { addSuppression } from '../../commands/suppressions/handlers.ts';
import { returnPathName } from '../../domain/domains/records.ts';
import {
  decideAttemptOutcomes,
  decideStartSending,
  emailDeliveryAggregate,
  openRecipients,
  type AttemptAnswer,
  type EmailDeliveryState,
} from '../../domain/emails/delivery.ts';
import { emailStream, type EmailEvent } from '../../domain/emails/events.ts';
import { DEFAULT_RETRY_SCHEDULE, type RetrySchedule } from '../../domain/sending/retry.ts';
import type { BlobStore } from '../../infra/blobs/port.ts';
import type { Delivery as Job, JobOutcome, WorkQueue } from '../../infra/bus/port.ts';
import { WrongExpectedRevision } from '../../infra/eventstore/port.ts';
import type { Delivery } from '../../infra/outbound/delivery.ts';
import { signMessage, type DkimSigningKey } from '../../infra/outbound/dkim.ts';
import type { SecretStore } from '../../infra/secrets/port.ts';
import { DueWork, type DueWakeups } from '../due-work.ts';

export interface EmailDeliveryOptions {
  /** The bus queue of delivery jobs; one per database (jobs name rows of it). */
  queue: string;
  pollMs: number;
  /**
   * A job enqueued this long ago without an answer recorded is enqueued again (lost by the bus, or
   * its worker died). Longer than the slowest attempt direct delivery allows (its timeouts).
   */
  staleAfterMs: number;
  /** Attempts under way at once in this process. */
  concurrency: number;
  /** When deferred recipients are tried again and when they expire (domain/sending/retry.ts). */
  retry: RetrySchedule;
  /** How long a domain's signing key is kept after reading it; a rotation is picked up within it. */
  keyCacheMs: number;
  /** Delay before an attempt that threw (a hard bounce's suppression failed) is offered again. */
  retryOnErrorMs: number;
}

export const DEFAULT_EMAIL_DELIVERY_OPTIONS: EmailDeliveryOptions = {
  queue: 'email-deliveries',
  pollMs: 50,
  staleAfterMs: 15 * 60_000,
  concurrency: 64,
  retry: DEFAULT_RETRY_SCHEDULE,
  keyCacheMs: 10_000,
  retryOnErrorMs: 5_000,
};

export interface EmailDeliveryDeps {
  pool: pg.Pool;
  bus: WorkQueue;
  wakeups: DueWakeups;
  commands: CommandContext;
  blobs: BlobStore;
  delivery: Delivery;
  secrets: SecretStore;
}

interface Due {
  id: string;
  claims: number;
}

interface Work {
  workspace_id: string;
  email_id: string;
  domain: string;
}

/**
 * The sending half of outbound delivery. A dispatcher claims due rows of the schedule
 * (schedule.ts) and publishes one job each; a worker takes the message in hand
 * (`EmailSendingStarted`, appended with the revision read, so a cancel racing it either wins and
 * nothing goes out or loses and is refused), reads the unsigned message from the blob store, signs
 * it with the sending domain's key, delivers it to the recipients on the row's domain and appends
 * one answer per recipient; a hard bounce suppresses the address. Everything it knows comes from
 * the message's stream and the schedule, so a restart, a lost job or a killed worker only repeats
 * an attempt (same Message-ID, which receivers de-duplicate by).
 */
export class EmailDeliveryProcess {
  private readonly work: DueWork<Due>;
  private readonly keys = new Map<string, { at: number; key: DkimSigningKey | null }>();

  constructor(
    private readonly deps: EmailDeliveryDeps,
    private readonly options: EmailDeliveryOptions = DEFAULT_EMAIL_DELIVERY_OPTIONS,
  ) {
    this.work = new DueWork<Due>(
      deps,
      options.queue,
      { pollMs: options.pollMs, staleAfterMs: options.staleAfterMs, label: 'email delivery' },
      {
        table: 'email_delivery_work',
        key: 'id',
        waiting: 'TRUE',
        when: 'next_attempt_at',
        order: 'next_attempt_at',
        set: 'claims = r.claims + 1',
        returning: 'r.id, r.claims',
      },
      (d) => ({ id: `${d.id}.${d.claims}`, payload: { id: d.id, claims: d.claims } }),
    );
  }

  async start(): Promise<void> {
    await this.work.start((job) => this.handle(job), {
      concurrency: this.options.concurrency,
      retryOnErrorMs: this.options.retryOnErrorMs,
      onError: (error) => console.error('email delivery:', error),
    });
  }

  async stop(): Promise<void> {
    await this.work.stop();
  }

  private async handle(job: Job): Promise<JobOutcome> {
    const { id, claims } = job.payload as unknown as Due;
    const { rows } = await this.deps.pool.query<Work>(
      'SELECT workspace_id, email_id, domain FROM email_delivery_work WHERE id = $1 AND claims = $2 AND enqueued_at IS NOT NULL',
      [id, claims],
    );
    const work = rows[0];
    if (!work) return { ack: true };
    const actor: Actor = { workspaceId: work.workspace_id, kind: 'system', id: null };
    const stream = emailStream(work.workspace_id, work.email_id);
    const state = await this.takeInHand(actor, stream);
    if (!state?.accepted) return { ack: true };
    const recipients = openRecipients(state, work.domain);
    if (recipients.length === 0) return { ack: true };

    const answers = await this.attempt(work, state.accepted, recipients);
    const now = new Date().toISOString();
    const events = decideAttemptOutcomes(state, { answers, now, schedule: this.options.retry });
    // A hard bounce is recorded only once its address is suppressed: a suppression that fails
    // leaves that recipient open, and the job, retried by the bus in seconds, attempts it alone
    // (and suppresses it, idempotently). The other answers are recorded now, so a recipient that
    // took the message is not sent it again by the retry.
    const unsuppressed = new Set<string>();
    let failure: unknown;
    for (const e of events) {
      if (e.type !== 'EmailRecipientBounced' || e.data.bounce !== 'hard') continue;
      try {
        await addSuppression(
          this.deps.commands,
          actor,
          { email: e.data.recipient, reason: 'bounce', detail: e.data.response.slice(0, 500) },
          now,
        );
      } catch (error) {
        unsuppressed.add(e.data.recipient);
        failure = error;
      }
    }
    // Answers are facts about recipients of this row only; another domain's row may append beside them.
    await this.append(
      actor,
      stream,
      events.filter((e) => e.type !== 'EmailRecipientBounced' || !unsuppressed.has(e.data.recipient)),
      'any',
    );
    if (unsuppressed.size > 0)
      throw new Error(`the bounce suppression of ${[...unsuppressed].join(', ')} failed`, { cause: failure });
    return { ack: true };
  }

  /** The message's state once it is going out; null when it was cancelled first. */
  private async takeInHand(actor: Actor, stream: string): Promise<EmailDeliveryState | null> {
    for (;;) {
      const { state, revision } = await loadState(this.deps.commands, stream, emailDeliveryAggregate);
      if (!state.accepted || state.cancelled) return null;
      const events = decideStartSending(state, { now: new Date().toISOString() });
      if (events.length === 0) return state;
      try {
        await this.append(actor, stream, events, revision);
        return emailDeliveryAggregate.evolve(state, events[0]!);
      } catch (error) {
        // A cancel (or another row of the message starting it) came first: decide again on it.
        if (!(error instanceof WrongExpectedRevision)) throw error;
      }
    }
  }

  /** One attempt at the recipients on one domain; every failure before the hand-over is an answer too. */
  private async attempt(
    work: Work,
    accepted: NonNullable<EmailDeliveryState['accepted']>,
    recipients: string[],
  ): Promise<AttemptAnswer[]> {
    const ours = (enhancedCode: string, response: string): AttemptAnswer[] =>
      recipients.map((recipient) => ({
        recipient,
        status: 'deferred',
        code: null,
        enhancedCode,
        response,
        mx: null,
        tls: null,
      }));
    const raw = await this.deps.blobs.get(accepted.raw.sha256);
    if (!raw) return ours('4.3.0', 'The message content is missing from the blob store.');
    const key = await this.signingKey(work.workspace_id, accepted.from.domainId);
    if (!key) return ours('4.3.5', 'The sending domain has no DKIM key to sign with.');
    const signed = await signMessage(raw, key);
    return this.deps.delivery.deliver({
      mailFrom: `${accepted.emailId}@${returnPathName(key.domain)}`,
      recipients,
      raw: signed,
    });
  }

  /** The sending domain's active key from its stream and the vault, kept `keyCacheMs`; null when it has none. */
  private async signingKey(workspaceId: string, domainId: string): Promise<DkimSigningKey | null> {
    const cached = this.keys.get(domainId);
    if (cached && Date.now() - cached.at < this.options.keyCacheMs) return cached.key;
    const domain = await loadDomain(this.deps.commands, workspaceId, domainId);
    const key =
      domain.domainId === null || domain.deleted || !domain.dkim
        ? null
        : {
            domain: domain.domain,
            selector: domain.dkim.selector,
            privateKeyPem: await dkimPrivateKey(this.deps.secrets, domainId, domain.dkim.keyId),
          };
    this.keys.set(domainId, { at: Date.now(), key });
    if (this.keys.size > 1000) this.keys.delete(this.keys.keys().next().value!);
    return key;
  }

  /**
   * Appends without waiting for read models: nothing here reads them back, and a worker held up
   * by a slow projection would hold up deliveries.
   */
  private async append(actor: Actor, stream: string, events: EmailEvent[], expected: number | 'any'): Promise<void> {
    if (events.length === 0) return;
    const { store, registry } = this.deps.commands;
    await store.append(
      stream,
      events.map((e) => ({
        ...registry.encode(e),
        metadata: { workspaceId: actor.workspaceId, actor: { kind: actor.kind, id: actor.id }, requestId: null },
      })),
      expected,
    );
  }
}
