import t from 'tap';
import { FONTS_MAX, PREVIEW_MAX } from '../../domain/templates/document.ts';
import { startTestApp } from '../support/app.ts';
import { errorOf, keyWith } from '../support/domains.ts';

const doc = (preview: string) => ({
  subject: 'Hello {{name}}',
  document: {
    preview,
    body: [
      { kind: 'Heading', text: 'Hi {{name}}', level: 2 },
      { kind: 'Text', text: 'You have {{count}} new messages.' },
      { kind: 'Button', text: 'Open', href: '{{link}}' },
    ],
  },
  slots: [{ name: 'teaser', default: 'News inside' }],
  props: [
    { name: 'name', type: 'string', required: true },
    { name: 'count', type: 'number', default: 3 },
    { name: 'link', type: 'url' },
  ],
});

/** One app for the file: each test makes a workspace of its own and reads only it. */
const h = await startTestApp(t);

t.test('template tools', async (t) => {
  const ws = await h.workspace();
  const other = await h.workspace();
  const create = async (body: object, key = ws.apiKey) => {
    const res = await h.request(key, 'POST', '/templates', body);
    if (res.statusCode !== 201) throw new Error(res.body);
    return res.json();
  };

  t.test('preview: the head with samples where nothing is given; render refuses the same', async (t) => {
    const tpl = await create({ name: 'Digest', publish: true, ...doc('{{teaser}} for {{name}}') });
    const edited = await h.request(ws.apiKey, 'PATCH', `/templates/${tpl.id}`, { subject: 'Draft for {{name}}' });
    t.equal(edited.json().latestVersion, 2);
    const preview = (body: object, key = ws.apiKey, id = tpl.id) =>
      h.request(key, 'POST', `/templates/${id}/preview`, body);

    const res = await preview({});
    t.equal(res.statusCode, 200, res.body);
    const shown = res.json();
    t.match(shown, {
      object: 'template_preview',
      templateId: tpl.id,
      version: 2,
      state: 'draft',
      subject: 'Draft for [name]',
      preview: 'News inside for [name]',
      values: { props: { name: '[name]', count: 3, link: 'https://example.com/' }, slots: { teaser: 'News inside' } },
    });
    t.match(shown.html, /Hi \[name\]/);
    t.match(shown.html, /You have 3 new messages/);
    t.match(shown.html, /href="https:\/\/example.com\/"/);
    t.match(shown.text, /Hi \[name\]/);
    t.same(errorOf(await h.request(ws.apiKey, 'POST', `/templates/${tpl.id}/render`, { version: 2 })), [
      422,
      'invalid_parameter',
      'props.name',
    ]);

    const given = await preview({ version: 1, props: { name: 'Ann', count: 7 }, slots: { teaser: 'Hot' } });
    t.equal(given.statusCode, 200, given.body);
    t.match(given.json(), { version: 1, state: 'published', subject: 'Hello Ann', preview: 'Hot for Ann' });
    t.match(given.json().html, /You have 7 new messages/);

    t.same(errorOf(await preview({ props: { nope: 1 } })), [422, 'unknown_template_prop', 'props.nope']);
    t.same(errorOf(await preview({ slots: { nope: 'x' } })), [422, 'unknown_template_slot', 'slots.nope']);
    t.same(errorOf(await preview({ props: { count: 'many' } })), [422, 'invalid_parameter', 'props.count']);
    t.same(errorOf(await preview({ version: 9 })), [422, 'template_version_not_found', 'version']);
    t.same(errorOf(await preview({ extra: 1 })), [422, 'unknown_parameter', 'extra']);
    t.same(errorOf(await preview({}, other.apiKey)), [404, 'resource_not_found', 'id'], "another workspace's");
    const testKey = await keyWith(h, ws.apiKey, { scopes: ['templates:read'], mode: 'test' });
    t.equal((await preview({}, testKey)).statusCode, 200, 'test keys preview: it changes nothing');
    const noScope = await keyWith(h, ws.apiKey, { scopes: ['emails:send'] });
    t.same(errorOf(await preview({}, noScope)), [403, 'insufficient_scope', null]);

    const html = await create({
      name: 'Raw',
      engine: 'html',
      subject: 'Raw {{who}}',
      html: '<p>Hi {{who}}</p>',
      props: [{ name: 'who', type: 'string' }],
    });
    const raw = await preview({}, ws.apiKey, html.id);
    t.equal(raw.statusCode, 200, raw.body);
    t.match(raw.json(), { preview: '', subject: 'Raw [who]', text: /Hi \[who\]/ });
  });

  t.test('preview line: 256 characters at most', async (t) => {
    const edge = await create({ name: 'Edge', ...doc('x'.repeat(PREVIEW_MAX)) });
    const res = await h.request(ws.apiKey, 'POST', `/templates/${edge.id}/preview`, {});
    t.equal(res.json().preview, 'x'.repeat(PREVIEW_MAX));
    const past = await h.request(ws.apiKey, 'POST', '/templates', {
      name: 'Past',
      ...doc('x'.repeat(PREVIEW_MAX + 1)),
    });
    t.same(errorOf(past), [422, 'invalid_template', 'document.preview']);
  });
});

t.test('fonts: the catalogue, and at most 8 per template', async (t) => {
  const ws = await h.workspace();
  const res = await h.request(ws.apiKey, 'GET', '/templates/fonts');
  t.equal(res.statusCode, 200, res.body);
  t.match(res.json(), { object: 'list', hasMore: false, nextCursor: null });
  t.ok(res.json().data.length >= 8);
  t.match(res.json().data[0], { object: 'template_font', family: 'Arial', url: null, weights: [400, 700] });
  t.same(errorOf(await h.request(ws.apiKey, 'GET', '/templates/fonts?limit=5')), [422, 'unknown_parameter', 'limit']);
  const noScope = await keyWith(h, ws.apiKey, { scopes: ['emails:send'] });
  t.same(errorOf(await h.request(noScope, 'GET', '/templates/fonts')), [403, 'insufficient_scope', null]);

  const catalogue = res.json().data as { family: string; fallback: string }[];
  const fonts = (n: number) =>
    Array.from({ length: n }, (_, i) => {
      const f = catalogue[i % catalogue.length]!;
      return { family: f.family, fallback: f.fallback, weight: i < catalogue.length ? 400 : 700 };
    });
  const body = (n: number, name: string) => ({
    name,
    subject: 'Fonts',
    document: { fonts: fonts(n), body: [{ kind: 'Text', text: 'Hello' }] },
  });
  const eight = await h.request(ws.apiKey, 'POST', '/templates', body(FONTS_MAX, 'Eight fonts'));
  t.equal(eight.statusCode, 201, eight.body);
  const shown = await h.request(ws.apiKey, 'POST', `/templates/${eight.json().id}/preview`, {});
  t.match(shown.json().html, /font-family:\s*'?Arial'?/);
  t.same(errorOf(await h.request(ws.apiKey, 'POST', '/templates', body(FONTS_MAX + 1, 'Nine fonts'))), [
    422,
    'invalid_template',
    'document.fonts',
  ]);
});
