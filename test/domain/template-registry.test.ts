import t from 'tap';
import { refusal } from '../support/refusal.ts';
import { copyName, decideRegister, decideRename, decideUnregister, slugFromName, TEMPLATES_MAX } from '../../domain/template-registry/decide.ts';
import type { TemplateRegistryEvent } from '../../domain/template-registry/events.ts';
import { templateRegistryAggregate, type TemplateRegistryState } from '../../domain/template-registry/state.ts';

const NOW = '2026-01-01T00:00:00.000Z';
const given = (events: TemplateRegistryEvent[]): TemplateRegistryState => events.reduce(templateRegistryAggregate.evolve, templateRegistryAggregate.initialState);
const registered = (templateId: string, name: string, slug: string): TemplateRegistryEvent => ({ type: 'TemplateRegistered', data: { templateId, name, slug, registeredAt: NOW } });

t.test('slugs come from names: ASCII letters and digits joined by hyphens, at most 64', async (t) => {
  t.equal(slugFromName('Welcome Email!'), 'welcome-email');
  t.equal(slugFromName('  Crème brûlée — Menü 2 '), 'creme-brulee-menu-2');
  t.equal(slugFromName('***'), 'template');
  t.equal(slugFromName('a'.repeat(70)).length, 64);
  t.equal(slugFromName(`${'a'.repeat(63)} b`), 'a'.repeat(63), 'no trailing hyphen after the cut');
});

t.test('register: name and slug taken ignoring case; a derived slug takes a free suffix', async (t) => {
  const state = given([registered('tpl_1', 'Welcome', 'welcome')]);
  t.equal(refusal(() => decideRegister(state, { templateId: 'tpl_2', name: ' WELCOME ', slug: null, now: NOW })).code, 'template_name_taken');
  const taken = refusal(() => decideRegister(state, { templateId: 'tpl_2', name: 'Other', slug: 'welcome', now: NOW }));
  t.same([taken.code, taken.param], ['template_slug_taken', 'slug']);
  t.same(decideRegister(state, { templateId: 'tpl_2', name: 'Welcome!', slug: null, now: NOW }), [registered('tpl_2', 'Welcome!', 'welcome-2')]);
  t.same(decideRegister(state, { templateId: 'tpl_1', name: 'Welcome', slug: null, now: NOW }), [], 'a retry of the same registration writes nothing');
});

t.test('register: 200 places, archived ones included; only unregistering frees one', async (t) => {
  const full = given(Array.from({ length: TEMPLATES_MAX }, (_, i) => registered(`tpl_${i}`, `T${i}`, `t${i}`)));
  t.equal(refusal(() => decideRegister(full, { templateId: 'tpl_new', name: 'New', slug: null, now: NOW })).code, 'workspace_limit_reached');
  const freed = given([...Array.from({ length: TEMPLATES_MAX }, (_, i) => registered(`tpl_${i}`, `T${i}`, `t${i}`)), ...decideUnregister(full, { templateId: 'tpl_0', now: NOW })]);
  t.equal(decideRegister(freed, { templateId: 'tpl_new', name: 'T0', slug: 't0', now: NOW }).length, 1, 'the freed name and slug are usable again');
});

t.test('rename: keeps the slug, refuses a taken name, a same-name rename writes nothing', async (t) => {
  const state = given([registered('tpl_1', 'Welcome', 'welcome'), registered('tpl_2', 'Receipt', 'receipt')]);
  t.same(decideRename(state, { templateId: 'tpl_1', name: 'Hello', renames: null, now: NOW }), [{ type: 'TemplateRenamed', data: { templateId: 'tpl_1', name: 'Hello', renamedAt: NOW } }]);
  t.same(decideRename(state, { templateId: 'tpl_1', name: 'Welcome', renames: null, now: NOW }), []);
  t.equal(decideRename(state, { templateId: 'tpl_1', name: 'WELCOME', renames: null, now: NOW }).length, 1, 'a change of case is a rename of its own name');
  t.equal(refusal(() => decideRename(state, { templateId: 'tpl_1', name: 'receipt', renames: null, now: NOW })).code, 'template_name_taken');
  const after = given([registered('tpl_1', 'Welcome', 'welcome'), ...decideRename(state, { templateId: 'tpl_1', name: 'Hello', renames: null, now: NOW })]);
  t.same(after.entries.get('tpl_1'), { templateId: 'tpl_1', name: 'Hello', slug: 'welcome', renames: 1 });
});

t.test("rename under an ETag: the rename count it holds must be the entry's, a rename to the same name included", async (t) => {
  const renamed: TemplateRegistryEvent = { type: 'TemplateRenamed', data: { templateId: 'tpl_1', name: 'Hello', renamedAt: NOW } };
  const state = given([registered('tpl_1', 'Welcome', 'welcome'), renamed]);
  t.equal(decideRename(state, { templateId: 'tpl_1', name: 'Again', renames: 1, now: NOW }).length, 1);
  t.equal(refusal(() => decideRename(state, { templateId: 'tpl_1', name: 'Again', renames: 0, now: NOW })).code, 'version_conflict');
  t.equal(refusal(() => decideRename(state, { templateId: 'tpl_1', name: 'Hello', renames: 0, now: NOW })).code, 'version_conflict', 'a stale tag is refused even when nothing would change');
  t.equal(refusal(() => decideRename(state, { templateId: 'tpl_2', name: 'Again', renames: 0, now: NOW })).code, 'resource_not_found');
});

t.test('copy names are free and within 100 characters', async (t) => {
  const state = given([registered('tpl_1', 'Welcome', 'welcome'), registered('tpl_2', 'Welcome (copy)', 'welcome-copy')]);
  t.equal(copyName(state, 'Welcome'), 'Welcome (copy 2)');
  t.equal(copyName(state, 'x'.repeat(100)).length, 100);
});
