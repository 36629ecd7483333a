import path from 'node:path';
import { readFile } from 'node:fs/promises';
import t from 'tap';
import { createMailClient } from '../../client/index.ts';
import { typesOf } from '../../client/typegen.ts';
import { startTestApp } from '../support/app.ts';
import { ROOT } from '../support/paths.ts';

/**
 * The typed client (client/) against the service listening on a real socket: openapi-fetch over
 * the types openapi-typescript generated from /openapi.json.
 */

/** One app for the file: one test drives a workspace of its own, the other reads the document. */
const h = await startTestApp(t);

t.test('the typed client drives a real server: templates, then suppressions page by page', async (t) => {
  const ws = await h.workspace();
  const baseUrl = await h.app.listen({ port: 0, host: '127.0.0.1' });
  const client = createMailClient({ baseUrl, apiKey: ws.apiKey });

  const created = await client.POST('/templates', {
    body: {
      name: 'Welcome',
      subject: 'Hello {{name}}',
      document: {
        body: [
          { kind: 'Heading', text: 'Hi {{name}}' },
          { kind: 'Text', text: 'Welcome aboard.' },
        ],
      },
      props: [{ name: 'name', default: 'there' }],
    },
  });
  t.equal(created.response.status, 201);
  const template = created.data!;
  t.match(template, { object: 'template', name: 'Welcome', status: 'draft' });

  const published = await client.POST('/templates/{id}/publish', { params: { path: { id: template.id } }, body: {} });
  t.equal(published.data?.publishedVersion, 1);

  const rendered = await client.POST('/templates/{id}/render', {
    params: { path: { id: template.id } },
    body: { props: { name: 'Ann' } },
  });
  t.match(rendered.data, { object: 'rendered_template', version: 1, subject: 'Hello Ann' });
  t.match(rendered.data?.html, /Hi Ann/);

  // Errors come back typed as the envelope, with the codes the operation lists.
  const unknownProp = await client.POST('/templates/{id}/render', {
    params: { path: { id: template.id } },
    body: { props: { nope: 1 } },
  });
  t.equal(unknownProp.response.status, 422);
  t.equal(unknownProp.error?.error.code, 'unknown_template_prop');
  const missing = await client.GET('/suppressions/{id}', { params: { path: { id: 'sup_000000000000000000000000' } } });
  t.equal(missing.error?.error.code, 'resource_not_found');

  const emails = Array.from({ length: 7 }, (_, i) => `reader${i}@example.com`);
  for (const email of emails.slice(0, 5)) {
    const added = await client.POST('/suppressions', { body: { email } });
    t.equal(added.response.status, 201, email);
  }
  const seen: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await client.GET('/suppressions', { params: { query: { limit: 2, cursor } } });
    t.equal(page.response.status, 200);
    seen.push(...page.data!.data.map((s) => s.email));
    cursor = page.data!.nextCursor ?? undefined;
    // Rows added between pages land before the walk (newest first), so the walk neither repeats nor skips.
    if (++pages === 1) for (const email of emails.slice(5)) await client.POST('/suppressions', { body: { email } });
  } while (cursor);
  t.equal(pages, 3);
  t.same(seen, [...emails.slice(0, 5)].reverse(), 'every row once, newest first');

  const refused = await client.GET('/suppressions', { params: { query: { cursor: 'not-a-cursor' } } });
  t.equal(refused.error?.error.code, 'invalid_cursor');
});

t.test('client/schema.d.ts is what openapi-typescript makes of the served document', async (t) => {
  const doc = (await h.request(null, 'GET', '/openapi.json')).json();
  t.equal(
    await readFile(path.join(ROOT, 'client/schema.d.ts'), 'utf8'),
    await typesOf(doc),
    'the committed types are current (else run `npm run client`)',
  );
});
