import type { ImportResource } from '../../domain/provider-imports/providers.ts';
import { ProviderError, type ProviderClient, type SourcePage } from '../../infra/providers/port.ts';

/** Whether the pages after `page` may be read before it is checkpointed. */
export const goesOn = (page: SourcePage): boolean => page.next !== null && !page.waitMs && !page.nextStartsWork;

/**
 * A step's pages from `cursor` on, as one: read one after another until they hold `rows` rows,
 * so small pages (Brevo's 100 blocked addresses) are written and checkpointed together. It ends
 * early at a page that asks for a wait or whose next one starts work at the provider (never
 * asked before a checkpoint), and at a refusal of any page but the first (a 429 included): the
 * next step meets that one again, from the checkpoint after the pages read.
 */
export async function gather(
  source: ProviderClient,
  resource: ImportResource,
  cursor: string | null,
  rows: number,
): Promise<SourcePage> {
  let pages = await source.page(resource, cursor);
  while (goesOn(pages) && pages.items.length < rows) {
    let page: SourcePage;
    try {
      page = await source.page(resource, pages.next);
    } catch (error) {
      if (error instanceof ProviderError) break;
      throw error;
    }
    pages = { ...page, items: [...pages.items, ...page.items] };
  }
  return pages;
}

/** The longest wait of a 429 the reader ahead sits out itself; a longer one is left to the step that meets it. */
export const READER_WAIT_MAX_MS = 5_000;
/**
 * 429s in a row on one step the reader sits out; the next is left to the step, whose run then
 * waits on the schedule, where a cancel or another run can come in between, instead of holding a
 * job for as long as the provider keeps refusing.
 */
export const READER_WAITS_MAX = 3;

/**
 * The steps' pages of one resource (`gather`) read ahead of the writes, up to `depth` steps, in
 * order from `cursor`: while a step is written the provider is asked for the next ones at its own
 * pace, so a 429's wait (Brevo's reset is in whole seconds) is sat out while the pages read before
 * it are written, not after them. It stops at a page that asks for a wait or whose next one starts
 * work at the provider (never asked before a checkpoint), at the end, and at a refusal other than
 * a short 429 (or a fourth in a row), which is left for the step that takes it. Pages held here
 * are only a cache: the checkpoint's cursor is what a crash resumes from.
 */
export class PagesAhead {
  private readonly steps: Promise<SourcePage | null>[] = [];
  /** The last step asked for: the next is read from its `next` once it is in. */
  private last: Promise<SourcePage | null> | null = null;
  private stopped = false;

  constructor(
    private readonly source: ProviderClient,
    private readonly resource: ImportResource,
    /** The cursor of the step `take` answers first. */
    private readonly cursor: string,
    private readonly rows: number,
    private readonly depth: number,
  ) {
    this.topUp();
  }

  /**
   * The next step's pages (the first from `cursor`, each after from the `next` of the one before);
   * null when nothing was read ahead for it: the caller reads it itself. A refusal rejects.
   */
  take(): Promise<SourcePage | null> {
    const next = this.steps.shift() ?? Promise.resolve(null);
    this.topUp();
    return next;
  }

  stop(): void {
    this.stopped = true;
  }

  private topUp(): void {
    while (!this.stopped && this.steps.length < this.depth) {
      const before = this.last;
      const step: Promise<SourcePage | null> = before
        ? before.then((page) => (page && goesOn(page) && !this.stopped ? this.read(page.next!) : null))
        : this.read(this.cursor);
      step.catch(() => {});
      this.steps.push(step);
      this.last = step;
    }
  }

  private async read(cursor: string): Promise<SourcePage | null> {
    for (let waits = 0; ; waits++) {
      try {
        return await gather(this.source, this.resource, cursor, this.rows);
      } catch (error) {
        const wait = error instanceof ProviderError && error.kind === 'rate_limited' ? error.retryAfterMs : null;
        if (wait === null || wait > READER_WAIT_MAX_MS || waits === READER_WAITS_MAX) throw error;
        // Unref'd: a reader waiting out a 429 never holds up a process's exit.
        await new Promise((resolve) => setTimeout(resolve, wait).unref());
        if (this.stopped) return null;
      }
    }
  }
}
