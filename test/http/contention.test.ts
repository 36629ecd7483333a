import t from 'tap';
import { ACTIVE_KEY_LIMIT } from '../../domain/api-keys/decide.ts';
import { ENDPOINTS_MAX } from '../../domain/webhooks/decide.ts';
import { CUSTOM_ROLE_LIMIT } from '../../domain/roles/decide.ts';
import { startTestApp } from '../support/app.ts';

/**
 * Creates of different things that one stream per workspace holds (its limit, its names) all
 * land at once: every one under the limit must succeed, however many contend for the stream.
 */
t.test('concurrent creates on one registry stream all succeed under the limit', async (t) => {
  const h = await startTestApp(t, { webhooks: { allowPrivate: true } });
  const cases: [string, number, (i: number) => unknown][] = [
    ['/templates', 40, (i) => ({ name: `Template ${i}` })],
    ['/roles', CUSTOM_ROLE_LIMIT, (i) => ({ name: `Role ${i}`, permissions: ['templates:read'] })],
    ['/webhooks', ENDPOINTS_MAX, (i) => ({ url: `http://127.0.0.1:9/hook-${i}` })],
    ['/audiences', 40, (i) => ({ name: `Audience ${i}` })],
    // The owner's key is one of the active keys.
    ['/keys', ACTIVE_KEY_LIMIT - 1, (i) => ({ name: `Key ${i}`, scopes: [] })],
  ];
  for (const [path, count, body] of cases) {
    const ws = await h.workspace();
    const answers = await Promise.all(
      Array.from({ length: count }, (_, i) => h.request(ws.apiKey, 'POST', path, body(i))),
    );
    const failed = answers.filter((a) => a.statusCode !== 201).map((a) => `${a.statusCode} ${a.json().error?.code}`);
    t.same(failed, [], `${count} concurrent POST ${path}: every one 201`);
    const list = await h.request(ws.apiKey, 'GET', `${path}?limit=100`);
    const ids = new Set((list.json().data as { id: string }[]).map((r) => r.id));
    t.ok(
      answers.every((a) => ids.has(a.json().id)),
      `${path}: every one created is listed`,
    );
  }
});
