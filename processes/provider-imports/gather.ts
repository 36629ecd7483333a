import type { ImportResource } from '../../domain/provider-imports/providers.ts';
import { ProviderError, type ProviderClient, type SourcePage } from '../../infra/providers/port.ts';

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
  while (pages.next !== null && !pages.waitMs && !pages.nextStartsWork && pages.items.length < rows) {
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

/** A step's pages (`gather`), asked for now, while another step is written; a refusal is left for whoever awaits them. */
export function readAhead(
  source: ProviderClient,
  resource: ImportResource,
  cursor: string,
  rows: number,
): Promise<SourcePage> {
  const pages = gather(source, resource, cursor, rows);
  pages.catch(() => {});
  return pages;
}
