import type pg from 'pg';
import type { CommandContext } from '../../commands/execute.ts';
import { type FilingLookups, fileSentMessage } from '../../commands/threads/handlers.ts';
import { returnPathName } from '../../domain/domains/records.ts';
import { catchAllOwner } from '../../domain/shared/mailbox-owners.ts';
import type { BlobStore } from '../../infra/blobs/port.ts';
import type { Delivery as Job, JobOutcome, WorkQueue } from '../../infra/bus/port.ts';
import { parseMessage } from '../../infra/inbound/summary.ts';
import type { TextIndex } from '../../infra/search/port.ts';
import { DueWork, type DueWakeups } from '../due-work.ts';

export interface SentMailOptions {
  queue: string;
  pollMs: number;
  staleAfterMs: number;
  /** Delay before the next try after try n failed; the last one repeats until it is filed. */
  retryMs: number[];
}

export const DEFAULT_SENT_MAIL_OPTIONS: SentMailOptions = {
  queue: 'sent-mail-filing',
  pollMs: 200,
  staleAfterMs: 60_000,
  retryMs: [5_000, 60_000, 600_000, 3_600_000],
};

export interface SentMailPorts {
  pool: pg.Pool;
  bus: WorkQueue;
  wakeups: DueWakeups;
  commands: CommandContext;
  blobs: BlobStore;
  texts: TextIndex;
  lookups: Pick<FilingLookups, 'threading'>;
}

interface Owed {
  email_id: string;
  workspace_id: string;
  address_id: string;
  address: string;
  domain_id: string;
  raw_sha256: string;
  raw_size: string;
  bcc: string[];
  sent_at: Date;
}

/**
 * Files the sent mail the reactor (sent-mail.ts) owes: the composed message is read from the blob
 * store and parsed like arriving mail (its attachments stored, its text indexed for search), then
 * filed in the sender's mailbox through the threading arriving mail uses. A failed try is tried
 * again after `retryMs`; the row stays until its `MessageSent` is in the log.
 */
export class SentMailFilingProcess {
  private readonly work: DueWork<{ email_id: string; claims: number }>;

  constructor(
    private readonly deps: SentMailPorts,
    private readonly options: SentMailOptions = DEFAULT_SENT_MAIL_OPTIONS,
  ) {
    this.work = new DueWork(
      deps,
      options.queue,
      { pollMs: options.pollMs, staleAfterMs: options.staleAfterMs, label: 'sent mail filing' },
      {
        table: 'sent_mail_filing',
        key: 'email_id',
        waiting: 'TRUE',
        when: 'due_at',
        order: 'due_at',
        set: 'claims = r.claims + 1',
        returning: 'r.email_id, r.claims',
      },
      (r) => ({ id: `${options.queue}-${r.email_id}.${r.claims}`, payload: { emailId: r.email_id, claims: r.claims } }),
    );
  }

  async start(): Promise<void> {
    await this.work.start((job) => this.handle(job), {
      concurrency: 4,
      onError: (error) => console.error('sent mail filing:', error),
    });
  }

  stop(): Promise<void> {
    return this.work.stop();
  }

  private async handle(job: Job): Promise<JobOutcome> {
    const { emailId, claims } = job.payload as { emailId: string; claims: number };
    const { pool } = this.deps;
    const { rows } = await pool.query<Owed>(
      `SELECT email_id, workspace_id, address_id, address, domain_id, raw_sha256, raw_size, bcc, sent_at
       FROM sent_mail_filing WHERE email_id = $1 AND claims = $2 AND due_at IS NOT NULL`,
      [emailId, claims],
    );
    const owed = rows[0];
    if (!owed) return { ack: true };
    try {
      await this.file(owed);
    } catch (error) {
      console.error(`sent mail filing of ${emailId} (try ${claims}):`, error);
      const { retryMs } = this.options;
      await pool.query(
        `UPDATE sent_mail_filing SET enqueued_at = NULL,
           due_at = now() + make_interval(secs => $3::double precision / 1000)
         WHERE email_id = $1 AND claims = $2`,
        [emailId, claims, retryMs[Math.min(claims, retryMs.length) - 1] ?? 0],
      );
    }
    return { ack: true };
  }

  private async file(owed: Owed): Promise<void> {
    const { blobs, texts, commands, lookups } = this.deps;
    const raw = await blobs.get(owed.raw_sha256);
    if (raw === null) throw new Error(`blob ${owed.raw_sha256} is missing`);
    const size = Number(owed.raw_size);
    const parsed = await parseMessage(blobs, raw, size);
    const domain = owed.address.slice(owed.address.lastIndexOf('@') + 1);
    const summary = {
      ...parsed.summary,
      bcc: parsed.summary.bcc.length > 0 ? parsed.summary.bcc : owed.bcc.map((address) => ({ name: null, address })),
    };
    // A catch-all's automatic reply went from the address the mail reached it at, and is filed in
    // the catch-all, beside the message it answers (commands/rules/run.ts).
    const mailbox =
      owed.address_id === catchAllOwner(owed.domain_id)
        ? { addressId: null, address: `*@${domain}`, domainId: owed.domain_id, domain }
        : { addressId: owed.address_id, address: owed.address, domainId: owed.domain_id, domain };
    // The words first: the thread's search reads them as the message is filed.
    await texts.put(owed.raw_sha256, parsed.searchText);
    await fileSentMessage(commands, lookups, owed.workspace_id, mailbox, {
      emailId: owed.email_id,
      mailFrom: `${owed.email_id}@${returnPathName(domain)}`,
      raw: { sha256: owed.raw_sha256, size },
      summary,
      sentAt: owed.sent_at.toISOString(),
    });
  }
}
