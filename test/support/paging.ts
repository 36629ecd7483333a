import type { TestApp } from './app.ts';

/**
 * Walks a cursor list page by page (`path` ends in `limit=<n>`), calling `between` after the first
 * page (a row added mid-walk). Answers the ids in the order seen and the number of pages; every
 * page must be a 200 whose `hasMore` agrees with its `nextCursor`.
 */
export async function walkPages(
  h: TestApp,
  key: string,
  path: string,
  between: () => Promise<unknown>,
): Promise<{ seen: string[]; pages: number }> {
  const seen: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const page = await h.request(key, 'GET', `${path}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    if (page.statusCode !== 200) throw new Error(page.body);
    const body = page.json();
    if (body.hasMore !== (body.nextCursor !== null)) throw new Error(`hasMore disagrees with nextCursor: ${page.body}`);
    seen.push(...body.data.map((x: { id: string }) => x.id));
    cursor = body.nextCursor;
    if (pages++ === 0) await between();
  } while (cursor);
  return { seen, pages };
}
