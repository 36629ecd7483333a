import t from 'tap';
import {
  dayOf,
  decideReturnAiActions,
  decideSpendAiActions,
  secondsToNextDay,
} from '../../domain/ai-actions/decide.ts';
import type { AiActionEvent } from '../../domain/ai-actions/events.ts';
import { aiActionsAggregate, type AiActionsState } from '../../domain/ai-actions/state.ts';
import { checkTranslationLength, targetLanguage, TRANSLATION_MAX } from '../../domain/emails/translation.ts';
import { refusal } from '../support/refusal.ts';

const NOW = '2026-03-10T22:00:00.000Z';
const given = (events: AiActionEvent[]): AiActionsState =>
  events.reduce(aiActionsAggregate.evolve, aiActionsAggregate.initialState);
const spend = (state: AiActionsState, allowance = 3) =>
  decideSpendAiActions(state, { day: dayOf(NOW), count: 1, allowance, purpose: 'translate', now: NOW });

t.test('the daily allowance of AI actions', async (t) => {
  t.test('given nothing spent today, spending one records the running total', async (t) => {
    t.same(spend(given([])), [
      {
        type: 'AiActionsSpent',
        data: { day: '2026-03-10', count: 1, used: 1, purpose: 'translate', spentAt: NOW },
      },
    ]);
  });

  t.test('at the edge the last one is granted; one past is 429 ai_quota_exceeded, nothing written', async (t) => {
    let state = given([]);
    for (let i = 0; i < 2; i++) state = spend(state).reduce(aiActionsAggregate.evolve, state);
    const last = spend(state);
    t.match(last, [{ data: { used: 3 } }]);
    state = last.reduce(aiActionsAggregate.evolve, state);
    const refused = refusal(() => spend(state));
    t.equal(refused.code, 'ai_quota_exceeded');
    t.match(refused.message, /3 AI actions of today/);
  });

  t.test('a request is never granted in part', async (t) => {
    t.equal(
      refusal(() =>
        decideSpendAiActions({ used: 8 }, { day: '2026-03-10', count: 10, allowance: 10, purpose: 'design', now: NOW }),
      ).code,
      'ai_quota_exceeded',
    );
  });

  t.test('a failed call gives its action back, never below zero', async (t) => {
    const state = given([
      { type: 'AiActionsSpent', data: { day: '2026-03-10', count: 1, used: 1, purpose: 'design', spentAt: NOW } },
    ]);
    const back = decideReturnAiActions(state, { day: '2026-03-10', count: 1, now: NOW });
    t.same(back, [{ type: 'AiActionsReturned', data: { day: '2026-03-10', count: 1, used: 0, returnedAt: NOW } }]);
    t.same(decideReturnAiActions(given(back), { day: '2026-03-10', count: 1, now: NOW }), []);
    t.same(spend(given([...back])), spend(given([])), 'the action is there to spend again');
  });

  t.test('days are UTC; the allowance starts again at midnight UTC', async (t) => {
    t.equal(dayOf('2026-03-10T23:59:59.999Z'), '2026-03-10');
    t.equal(secondsToNextDay(NOW), 7200);
    t.equal(secondsToNextDay('2026-12-31T23:59:59.500Z'), 1);
    t.equal(secondsToNextDay('2026-03-10T00:00:00.000Z'), 86_400);
  });
});

t.test('translation targets and length', async (t) => {
  t.same(targetLanguage('de', 'translate.to'), { tag: 'de', name: 'German' });
  t.same(targetLanguage('PT-br', 'translate.to'), { tag: 'pt-BR', name: 'Brazilian Portuguese' });
  t.equal(targetLanguage('zh-Hant', 'translate.to').tag, 'zh-Hant');
  for (const tag of ['zz', 'klingon', 'en-XX', 'x-private', 'und', '', 'de_DE', 'zh-Abcd']) {
    const refused = refusal(() => targetLanguage(tag, 'translate.to'));
    t.same([refused.code, refused.param], ['unknown_language', 'translate.to'], tag);
  }
  checkTranslationLength({ subject: 's', text: 'x'.repeat(TRANSLATION_MAX - 1) });
  const refused = refusal(() => checkTranslationLength({ subject: 's', html: 'x'.repeat(TRANSLATION_MAX) }));
  t.same([refused.code, refused.param], ['translation_too_long', 'translate']);
});

t.test('a designed document becomes a new draft version on top of the head', async (t) => {
  const { decideDesignedVersion, designSource } = await import('../../domain/templates/design.ts');
  const { templateAggregate } = await import('../../domain/templates/state.ts');
  const head = {
    engine: 'html' as const,
    subject: 'Hi',
    document: null,
    html: '<p>x</p>',
    slots: [],
    props: [{ name: 'name', type: 'string', required: false, default: null, description: null }],
  };
  const state = [
    {
      type: 'TemplateCreated' as const,
      data: { templateId: 'tpl_1', description: null, starter: null, createdAt: NOW },
    },
    {
      type: 'TemplateVersionDrafted' as const,
      data: { templateId: 'tpl_1', versionId: 'tplv_1', version: 1, ...head, restoredFrom: null, draftedAt: NOW },
    },
    {
      type: 'TemplateVersionPublished' as const,
      data: { templateId: 'tpl_1', version: 1, sanitisedHtml: '<p>x</p>', publishedAt: NOW },
    },
  ].reduce(templateAggregate.evolve, templateAggregate.initialState);

  t.equal(refusal(() => designSource(state, 'redesign')).param, 'engine', 'redesign needs blocks');
  t.same(designSource(state, 'design').props, head.props);
  const document = { body: [{ kind: 'Text', text: 'Hello {{name}}' }] };
  const events = decideDesignedVersion(state, { versionId: 'tplv_2', document, now: NOW });
  t.match(events, [
    {
      type: 'TemplateVersionDrafted',
      data: { version: 2, engine: 'blocks', document, html: null, subject: 'Hi', props: head.props },
    },
  ]);
  t.equal(events.length, 1, 'never a publish');
  const after = events.reduce(templateAggregate.evolve, state);
  t.equal(after.publishedVersion, 1, 'sends keep the published version');
  t.equal(designSource(after, 'redesign').engine, 'blocks');
  const undeclared = refusal(() =>
    decideDesignedVersion(state, {
      versionId: 'tplv_3',
      document: { body: [{ kind: 'Text', text: '{{nope}}' }] },
      now: NOW,
    }),
  );
  t.same([undeclared.code, undeclared.param], ['invalid_template', 'document.body.0.text']);
});
