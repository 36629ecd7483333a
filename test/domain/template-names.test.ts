import t from 'tap';
import { refusal } from '../support/refusal.ts';
import {
  copyName,
  decideRegisterTemplate,
  decideRenameTemplate,
  decideUnregisterTemplate,
  slugFromName,
  TEMPLATES_MAX,
} from '../../domain/template-names/decide.ts';
import type { TemplateNameEvent } from '../../domain/template-names/events.ts';
import { templateNamesAggregate, type TemplateNamesState } from '../../domain/template-names/state.ts';

const NOW = '2026-01-01T00:00:00.000Z';
const given = (events: TemplateNameEvent[]): TemplateNamesState =>
  events.reduce(templateNamesAggregate.evolve, templateNamesAggregate.initialState);
const registered = (templateId: string, name: string, slug: string): TemplateNameEvent => ({
  type: 'TemplateRegistered',
  data: { templateId, name, slug, registeredAt: NOW },
});

t.test('slugs come from names: ASCII letters and digits joined by hyphens, at most 64', async (t) => {
  t.equal(slugFromName('Welcome Email!'), 'welcome-email');
  t.equal(slugFromName('  Crème brûlée — Menü 2 '), 'creme-brulee-menu-2');
  t.equal(slugFromName('***'), 'template');
  t.equal(slugFromName('a'.repeat(70)).length, 64);
  t.equal(slugFromName(`${'a'.repeat(63)} b`), 'a'.repeat(63), 'no trailing hyphen after the cut');
});

t.test('register: name and slug taken ignoring case; a derived slug takes a free suffix', async (t) => {
  const state = given([registered('tpl_1', 'Welcome', 'welcome')]);
  t.equal(
    refusal(() => decideRegisterTemplate(state, { templateId: 'tpl_2', name: ' WELCOME ', slug: null, now: NOW })).code,
    'template_name_taken',
  );
  const taken = refusal(() =>
    decideRegisterTemplate(state, { templateId: 'tpl_2', name: 'Other', slug: 'welcome', now: NOW }),
  );
  t.same([taken.code, taken.param], ['template_slug_taken', 'slug']);
  t.same(decideRegisterTemplate(state, { templateId: 'tpl_2', name: 'Welcome!', slug: null, now: NOW }), [
    registered('tpl_2', 'Welcome!', 'welcome-2'),
  ]);
  t.same(
    decideRegisterTemplate(state, { templateId: 'tpl_1', name: 'Welcome', slug: null, now: NOW }),
    [],
    'a retry of the same registration writes nothing',
  );
});

t.test('register: 200 places, archived ones included; only unregistering frees one', async (t) => {
  const full = given(Array.from({ length: TEMPLATES_MAX }, (_, i) => registered(`tpl_${i}`, `T${i}`, `t${i}`)));
  t.equal(
    refusal(() => decideRegisterTemplate(full, { templateId: 'tpl_new', name: 'New', slug: null, now: NOW })).code,
    'workspace_limit_reached',
  );
  const freed = given([
    ...Array.from({ length: TEMPLATES_MAX }, (_, i) => registered(`tpl_${i}`, `T${i}`, `t${i}`)),
    ...decideUnregisterTemplate(full, { templateId: 'tpl_0', now: NOW }),
  ]);
  t.equal(
    decideRegisterTemplate(freed, { templateId: 'tpl_new', name: 'T0', slug: 't0', now: NOW }).length,
    1,
    'the freed name and slug are usable again',
  );
});

t.test('rename: keeps the slug, refuses a taken name, a same-name rename writes nothing', async (t) => {
  const state = given([registered('tpl_1', 'Welcome', 'welcome'), registered('tpl_2', 'Receipt', 'receipt')]);
  t.same(decideRenameTemplate(state, { templateId: 'tpl_1', name: 'Hello', renames: null, now: NOW }), [
    { type: 'TemplateRenamed', data: { templateId: 'tpl_1', name: 'Hello', renamedAt: NOW } },
  ]);
  t.same(decideRenameTemplate(state, { templateId: 'tpl_1', name: 'Welcome', renames: null, now: NOW }), []);
  t.equal(
    decideRenameTemplate(state, { templateId: 'tpl_1', name: 'WELCOME', renames: null, now: NOW }).length,
    1,
    'a change of case is a rename of its own name',
  );
  t.equal(
    refusal(() => decideRenameTemplate(state, { templateId: 'tpl_1', name: 'receipt', renames: null, now: NOW })).code,
    'template_name_taken',
  );
  const after = given([
    registered('tpl_1', 'Welcome', 'welcome'),
    ...decideRenameTemplate(state, { templateId: 'tpl_1', name: 'Hello', renames: null, now: NOW }),
  ]);
  t.same(after.entries.get('tpl_1'), { templateId: 'tpl_1', name: 'Hello', slug: 'welcome', renames: 1 });
});

t.test(
  "rename under an ETag: the rename count it holds must be the entry's, a rename to the same name included",
  async (t) => {
    const renamed: TemplateNameEvent = {
      type: 'TemplateRenamed',
      data: { templateId: 'tpl_1', name: 'Hello', renamedAt: NOW },
    };
    const state = given([registered('tpl_1', 'Welcome', 'welcome'), renamed]);
    t.equal(decideRenameTemplate(state, { templateId: 'tpl_1', name: 'Again', renames: 1, now: NOW }).length, 1);
    t.equal(
      refusal(() => decideRenameTemplate(state, { templateId: 'tpl_1', name: 'Again', renames: 0, now: NOW })).code,
      'version_conflict',
    );
    t.equal(
      refusal(() => decideRenameTemplate(state, { templateId: 'tpl_1', name: 'Hello', renames: 0, now: NOW })).code,
      'version_conflict',
      'a stale tag is refused even when nothing would change',
    );
    t.equal(
      refusal(() => decideRenameTemplate(state, { templateId: 'tpl_2', name: 'Again', renames: 0, now: NOW })).code,
      'resource_not_found',
    );
  },
);

t.test('copy names are free and within 100 characters', async (t) => {
  const state = given([
    registered('tpl_1', 'Welcome', 'welcome'),
    registered('tpl_2', 'Welcome (copy)', 'welcome-copy'),
  ]);
  t.equal(copyName(state, 'Welcome'), 'Welcome (copy 2)');
  t.equal(copyName(state, 'x'.repeat(100)).length, 100);
});
