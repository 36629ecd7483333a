import t from 'tap';
import { refusal } from '../support/refusal.ts';
import {
  decideArchiveTemplate,
  decideCreateTemplate,
  decideDeleteTemplate,
  decideDeleteTemplateVersion,
  decideEditTemplate,
  decidePublishTemplate,
  decideRestoreTemplateVersion,
  decideUnarchiveTemplate,
  mergeContent,
  sendableVersion,
  type CreateTemplate,
} from '../../domain/templates/decide.ts';
import type { TemplateContent, TemplateEvent } from '../../domain/templates/events.ts';
import { statusOf, templateAggregate, type TemplateState } from '../../domain/templates/state.ts';

const NOW = '2026-01-01T00:00:00.000Z';
const T = 'tpl_1';
const given = (events: TemplateEvent[]): TemplateState =>
  events.reduce(templateAggregate.evolve, templateAggregate.initialState);
const sanitise = (html: string) => html.replace(/<script.*?<\/script>/g, '');
const text = (s: string) => ({ kind: 'Text', text: s });
const content = (overrides: Partial<TemplateContent> = {}): TemplateContent => ({
  engine: 'blocks',
  subject: 'Hello {{name}}',
  document: { body: [text('Hi {{name}}')] },
  html: null,
  slots: [],
  props: [{ name: 'name', type: 'string', required: false, default: 'there', description: null }],
  ...overrides,
});
const create = (overrides: Partial<CreateTemplate> = {}): CreateTemplate => ({
  templateId: T,
  versionId: 'tplv_1',
  description: null,
  starter: null,
  content: content(),
  publish: false,
  sanitise,
  now: NOW,
  ...overrides,
});
const edit = (
  patch: Parameters<typeof decideEditTemplate>[1]['content'],
  extra: Partial<Parameters<typeof decideEditTemplate>[1]> = {},
) => ({
  ifMatch: null,
  now: NOW,
  content: patch,
  publish: false,
  versionId: 'tplv_next',
  sanitise,
  ...extra,
});
const types = (events: TemplateEvent[]) => events.map((e) => e.type);

t.test('create without publish: status draft, version 1 a draft', async (t) => {
  const events = decideCreateTemplate(given([]), create());
  t.same(types(events), ['TemplateCreated', 'TemplateVersionDrafted']);
  const s = given(events);
  t.equal(statusOf(s), 'draft');
  t.same([s.latestVersion, s.publishedVersion, s.versions.get(1)!.published], [1, null, false]);
  t.equal(refusal(() => sendableVersion(s)).code, 'template_not_published');
});

t.test('create with publish: version 1 published, status active, sendable', async (t) => {
  const s = given(decideCreateTemplate(given([]), create({ publish: true })));
  t.same([statusOf(s), s.publishedVersion, s.versions.get(1)!.published], ['active', 1, true]);
  t.equal(sendableVersion(s), 1);
});

t.test('publishing needs a subject and a body', async (t) => {
  const noSubject = refusal(() =>
    decideCreateTemplate(given([]), create({ publish: true, content: content({ subject: ' ' }) })),
  );
  t.same([noSubject.code, noSubject.param], ['invalid_template', 'subject']);
  const noBody = refusal(() =>
    decideCreateTemplate(given([]), create({ publish: true, content: content({ document: { body: [] } }) })),
  );
  t.same([noBody.code, noBody.param], ['invalid_template', 'document.body']);
  const noHtml = refusal(() =>
    decideCreateTemplate(
      given([]),
      create({ publish: true, content: content({ engine: 'html', document: null, html: '' }) }),
    ),
  );
  t.same([noHtml.code, noHtml.param], ['invalid_template', 'html']);
});

t.test('a placeholder naming nothing declared is refused at save', async (t) => {
  const e = refusal(() =>
    decideCreateTemplate(given([]), create({ content: content({ document: { body: [text('Hi {{nobody}}')] } }) })),
  );
  t.equal(e.code, 'invalid_template');
  t.match(e.param, /^document\.body\.0/);
});

t.test('html engine: sanitised when published, stored as submitted', async (t) => {
  const html = '<p>Hi {{name}}</p><script>alert(1)</script>';
  const events = decideCreateTemplate(
    given([]),
    create({ publish: true, content: content({ engine: 'html', document: null, html }) }),
  );
  const published = events.find((e) => e.type === 'TemplateVersionPublished')!;
  t.equal((published.data as { sanitisedHtml: string }).sanitisedHtml, '<p>Hi {{name}}</p>');
  t.equal(given(events).versions.get(1)!.html, html);
});

t.test('editing an unpublished head replaces it; no new version', async (t) => {
  const s0 = given(decideCreateTemplate(given([]), create()));
  const events = decideEditTemplate(s0, edit({ subject: 'New {{name}}' }));
  t.same(types(events), ['TemplateDraftEdited']);
  const s1 = given([...decideCreateTemplate(given([]), create()), ...events]);
  t.same([s1.latestVersion, s1.versions.get(1)!.subject], [1, 'New {{name}}']);
});

t.test('editing a published head mints a new draft; the published version stays live and frozen', async (t) => {
  const h0 = decideCreateTemplate(given([]), create({ publish: true }));
  const e1 = decideEditTemplate(given(h0), edit({ subject: 'Changed {{name}}' }));
  t.same(types(e1), ['TemplateVersionDrafted']);
  const s1 = given([...h0, ...e1]);
  t.same([s1.latestVersion, s1.publishedVersion, statusOf(s1)], [2, 1, 'active']);
  t.equal(s1.versions.get(1)!.subject, 'Hello {{name}}', 'version 1 unchanged');
  t.equal(sendableVersion(s1), 1, 'sends keep the published version');
  const e2 = decideEditTemplate(s1, edit({ subject: 'Again {{name}}' }));
  t.same(types(e2), ['TemplateDraftEdited'], 'the new head is a draft: edited in place');
  const s2 = given([...h0, ...e1, ...e2]);
  const e3 = decidePublishTemplate(s2, { ifMatch: null, now: NOW, version: null, sanitise });
  const s3 = given([...h0, ...e1, ...e2, ...e3]);
  t.same([s3.publishedVersion, s3.versions.get(2)!.subject], [2, 'Again {{name}}']);
});

t.test('an edit that changes nothing writes nothing; publish in the same edit', async (t) => {
  const h0 = decideCreateTemplate(given([]), create({ publish: true }));
  t.same(decideEditTemplate(given(h0), edit({ subject: 'Hello {{name}}' })), []);
  const e = decideEditTemplate(given(h0), edit({ subject: 'Next {{name}}' }, { publish: true }));
  t.same(types(e), ['TemplateVersionDrafted', 'TemplateVersionPublished']);
  t.equal(given([...h0, ...e]).publishedVersion, 2);
});

t.test('mergeContent follows the engine that was sent and drops the other body', async (t) => {
  const head = content();
  t.same(mergeContent(head, { html: '<p>x</p>' }), { ...head, engine: 'html', document: null, html: '<p>x</p>' });
  t.equal(refusal(() => mergeContent(head, { engine: 'blocks', html: '<p/>' })).param, 'html');
  t.equal(refusal(() => mergeContent(head, { engine: 'html', document: { body: [] } })).param, 'document');
  t.same(mergeContent(head, { slots: [] }).props, head.props, 'omitted lists stay');
});

t.test(
  'publish: unknown version 422; publishing the live one again writes nothing; an older one is a rollback',
  async (t) => {
    const h0 = decideCreateTemplate(given([]), create({ publish: true }));
    const h1 = [...h0, ...decideEditTemplate(given(h0), edit({ subject: 'Two {{name}}' }, { publish: true }))];
    const s = given(h1);
    t.equal(
      refusal(() => decidePublishTemplate(s, { ifMatch: null, now: NOW, version: 9, sanitise })).code,
      'template_version_not_found',
    );
    t.same(decidePublishTemplate(s, { ifMatch: null, now: NOW, version: 2, sanitise }), []);
    const back = given([...h1, ...decidePublishTemplate(s, { ifMatch: null, now: NOW, version: 1, sanitise })]);
    t.equal(back.publishedVersion, 1);
  },
);

t.test('archive and unarchive: status follows, sends refuse archived, both idempotent', async (t) => {
  const h0 = decideCreateTemplate(given([]), create({ publish: true }));
  const h1 = [...h0, ...decideArchiveTemplate(given(h0), { ifMatch: null, now: NOW })];
  t.equal(statusOf(given(h1)), 'archived');
  t.equal(refusal(() => sendableVersion(given(h1))).code, 'template_archived');
  t.same(decideArchiveTemplate(given(h1), { ifMatch: null, now: NOW }), []);
  const h2 = [...h1, ...decideUnarchiveTemplate(given(h1), { ifMatch: null, now: NOW })];
  t.equal(statusOf(given(h2)), 'active');
  t.same(decideUnarchiveTemplate(given(h2), { ifMatch: null, now: NOW }), []);
  const draft = decideCreateTemplate(given([]), create());
  const d1 = [...draft, ...decideArchiveTemplate(given(draft), { ifMatch: null, now: NOW })];
  t.equal(
    statusOf(given([...d1, ...decideUnarchiveTemplate(given(d1), { ifMatch: null, now: NOW })])),
    'draft',
    'a never-published template goes back to draft',
  );
});

t.test('restore: the old content as a new draft head', async (t) => {
  const h0 = decideCreateTemplate(given([]), create({ publish: true }));
  const h1 = [...h0, ...decideEditTemplate(given(h0), edit({ subject: 'Two {{name}}' }, { publish: true }))];
  const e = decideRestoreTemplateVersion(given(h1), { ifMatch: null, now: NOW, version: 1, versionId: 'tplv_3' });
  const s = given([...h1, ...e]);
  t.same(
    [
      s.latestVersion,
      s.publishedVersion,
      s.versions.get(3)!.subject,
      s.versions.get(3)!.published,
      s.versions.get(3)!.restoredFrom,
    ],
    [3, 2, 'Hello {{name}}', false, 1],
  );
  t.equal(
    refusal(() => decideRestoreTemplateVersion(s, { ifMatch: null, now: NOW, version: 7, versionId: 'x' })).code,
    'template_version_not_found',
  );
});

t.test('delete version: never the only, the live or the head one', async (t) => {
  const h0 = decideCreateTemplate(given([]), create({ publish: true }));
  t.equal(
    refusal(() => decideDeleteTemplateVersion(given(h0), { ifMatch: null, now: NOW, version: 1 })).code,
    'template_version_not_deletable',
  );
  const h1 = [...h0, ...decideEditTemplate(given(h0), edit({ subject: 'Two {{name}}' }, { publish: true }))];
  const h2 = [...h1, ...decideEditTemplate(given(h1), edit({ subject: 'Three {{name}}' }))];
  const s = given(h2);
  t.equal(
    refusal(() => decideDeleteTemplateVersion(s, { ifMatch: null, now: NOW, version: 2 })).code,
    'template_version_not_deletable',
    'live',
  );
  t.equal(
    refusal(() => decideDeleteTemplateVersion(s, { ifMatch: null, now: NOW, version: 3 })).code,
    'template_version_not_deletable',
    'head',
  );
  const e = decideDeleteTemplateVersion(s, { ifMatch: null, now: NOW, version: 1 });
  t.same(types(e), ['TemplateVersionDeleted']);
  const after = given([...h2, ...e]);
  t.same([...after.versions.keys()], [2, 3]);
  t.equal(
    refusal(() => decideDeleteTemplateVersion(after, { ifMatch: null, now: NOW, version: 1 })).code,
    'template_version_not_found',
  );
});

t.test('If-Match: a stale revision is a version conflict and changes nothing', async (t) => {
  const h0 = decideCreateTemplate(given([]), create());
  const s = given(h0);
  t.equal(s.revision, 1);
  t.equal(refusal(() => decideEditTemplate(s, edit({ subject: 'x' }, { ifMatch: 0 }))).code, 'version_conflict');
  t.equal(refusal(() => decideArchiveTemplate(s, { ifMatch: 5, now: NOW })).code, 'version_conflict');
  t.equal(decideEditTemplate(s, edit({ subject: 'x' }, { ifMatch: 1 })).length, 1);
});

t.test('a deleted or unknown template is not found for every decision', async (t) => {
  const h0 = decideCreateTemplate(given([]), create());
  const gone = given([...h0, ...decideDeleteTemplate(given(h0), { ifMatch: null, now: NOW })]);
  for (const s of [given([]), gone]) {
    t.equal(refusal(() => decideEditTemplate(s, edit({ subject: 'x' }))).code, 'resource_not_found');
    t.equal(
      refusal(() => decidePublishTemplate(s, { ifMatch: null, now: NOW, version: null, sanitise })).code,
      'resource_not_found',
    );
    t.equal(refusal(() => decideDeleteTemplate(s, { ifMatch: null, now: NOW })).code, 'resource_not_found');
  }
  t.same(decideCreateTemplate(given(h0), create()), [], 'a retried create writes nothing');
});
