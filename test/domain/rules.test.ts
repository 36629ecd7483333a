import t from 'tap';
import {
  decideAllowReply,
  decideCreateRule,
  decideDeleteRule,
  decideRecordRun,
  decideReorderRules,
  decideUpdateRule,
  POSITION_MAX,
  RULES_MAX,
} from '../../domain/rules/decide.ts';
import {
  clockIn,
  evaluateRules,
  globMatches,
  isBounce,
  type MessageFacts,
  noReplyReason,
  type RuleToEvaluate,
} from '../../domain/rules/evaluate.ts';
import type { Condition, RuleDefinition, RuleEvent, RuleMailbox } from '../../domain/rules/events.ts';
import { ruleReplyAggregate, ruleRunAggregate, rulesAggregate, type RulesState } from '../../domain/rules/state.ts';
import { refusal } from '../support/refusal.ts';

const NOW = '2026-11-26T10:00:00.000Z';
const BOX: RuleMailbox = { address: 'ann@example.com', addressId: 'addr_1', domainId: 'd1' };
const given = (events: RuleEvent[], state: RulesState = rulesAggregate.initialState) =>
  events.reduce(rulesAggregate.evolve, state);
const cond = (c: Partial<Condition>): Condition => ({
  field: 'envelope_from',
  op: 'equals',
  value: 'x@y.test',
  header: null,
  negate: false,
  ...c,
});
const rule = (r: Partial<RuleDefinition> = {}): Omit<RuleDefinition, 'position'> => ({
  name: 'Rule',
  description: null,
  enabled: true,
  match: 'all',
  conditions: [cond({})],
  actions: [{ type: 'label', value: 'archive' }],
  stopProcessing: false,
  ...r,
});
const create = (state: RulesState, id: string, r: Partial<RuleDefinition> = {}, mailbox = BOX) =>
  decideCreateRule(state, { ruleId: id, mailbox, rule: rule(r), now: NOW });

t.test('create: appended after the last position of its mailbox, names unique per mailbox ignoring case', async (t) => {
  const first = create(given([]), 'rul_1', { name: 'One' });
  t.match(first, [{ type: 'RuleCreated', data: { ruleId: 'rul_1', position: 0, mailbox: BOX } }]);
  let s = given(first);
  s = given(create(s, 'rul_2', { name: 'Two' }), s);
  t.equal(s.rules.get('rul_2')?.position, 1);
  t.match(
    refusal(() => create(s, 'rul_3', { name: 'two' })),
    { code: 'rule_name_taken', param: 'name' },
  );
  const other = { address: '*@example.com', addressId: null, domainId: 'd1' };
  t.match(
    create(s, 'rul_3', { name: 'two' }, other),
    [{ data: { position: 0 } }],
    'another mailbox: free, own positions',
  );
  s = given(decideUpdateRule(s, { ruleId: 'rul_2', patch: { position: POSITION_MAX }, now: NOW }), s);
  t.match(create(s, 'rul_4', { name: 'Four' }), [{ data: { position: POSITION_MAX } }], 'never past the top');
});

t.test('create: the workspace limit is 100 rules, across mailboxes', async (t) => {
  let s = given([]);
  for (let i = 0; i < RULES_MAX; i++)
    s = given(create(s, `rul_${i}`, { name: `R${i}` }, i % 2 ? BOX : { ...BOX, address: 'bob@example.com' }), s);
  t.match(
    refusal(() => create(s, 'rul_x', { name: 'X' })),
    { code: 'workspace_limit_reached' },
  );
  s = given(decideDeleteRule(s, { ruleId: 'rul_0', now: NOW }), s);
  t.match(create(s, 'rul_x', { name: 'X' }), [{ type: 'RuleCreated' }], 'a delete frees a place');
});

t.test('a rule is checked whole: fields, operators, values, reject needs envelope_from', async (t) => {
  const s = given([]);
  const refused = (r: Partial<RuleDefinition>) => refusal(() => create(s, 'rul_1', r));
  t.match(refused({ conditions: [cond({ field: 'header', value: 'a' })] }), {
    code: 'invalid_parameter',
    param: 'conditions.0.header',
  });
  t.match(refused({ conditions: [cond({ header: 'X-A' })] }), { param: 'conditions.0.header' });
  t.match(refused({ conditions: [cond({}), cond({ field: 'bounced', value: 'yes' })] }), {
    param: 'conditions.1.value',
  });
  t.match(refused({ conditions: [cond({ field: 'spam', op: 'gt', value: 'true' })] }), { param: 'conditions.0.op' });
  t.match(refused({ conditions: [cond({ field: 'hour', value: '24' })] }), { param: 'conditions.0.value' });
  t.match(refused({ conditions: [cond({ field: 'weekday', value: '7' })] }), { param: 'conditions.0.value' });
  t.match(refused({ conditions: [cond({ field: 'message_size', value: '-1' })] }), { param: 'conditions.0.value' });
  t.match(refused({ conditions: [cond({ field: 'message_size', op: 'matches', value: '1*' })] }), {
    param: 'conditions.0.op',
  });
  t.match(refused({ conditions: [cond({ op: 'gt' })] }), { param: 'conditions.0.op' });
  t.match(refused({ conditions: [cond({ op: 'matches', value: '*a*' })] }), {
    code: 'invalid_parameter',
    param: 'conditions.0.value',
  });
  t.match(create(s, 'rul_1', { conditions: [cond({ op: 'matches', value: '*a1*' })] }), [{ type: 'RuleCreated' }]);
  t.match(refused({ actions: [{ type: 'forward', value: null }] }), { param: 'actions.0.value' });
  t.match(
    refused({ conditions: [cond({ field: 'spam', value: 'true' })], actions: [{ type: 'reject', value: null }] }),
    { code: 'reject_needs_envelope', param: 'actions.0.type' },
  );
  t.match(create(s, 'rul_1', { actions: [{ type: 'reject', value: null }] }), [{ type: 'RuleCreated' }]);
  t.match(
    create(s, 'rul_1', {
      conditions: [cond({ field: 'hour', op: 'gt', value: '23' }), cond({ field: 'bounced', value: 'false' })],
    }),
    [{ type: 'RuleCreated' }],
    'every edge value is taken',
  );
});

t.test('update: merged with the stored rule and checked whole', async (t) => {
  let s = given(create(given([]), 'rul_1', { name: 'One', actions: [{ type: 'reject', value: null }] }));
  s = given(create(s, 'rul_2', { name: 'Two' }), s);
  t.match(
    refusal(() =>
      decideUpdateRule(s, {
        ruleId: 'rul_1',
        patch: { conditions: [cond({ field: 'spam', value: 'true' })] },
        now: NOW,
      }),
    ),
    { code: 'reject_needs_envelope' },
    'the stored reject meets the new conditions',
  );
  t.match(
    refusal(() => decideUpdateRule(s, { ruleId: 'rul_1', patch: { name: 'TWO' }, now: NOW })),
    {
      code: 'rule_name_taken',
    },
  );
  t.match(decideUpdateRule(s, { ruleId: 'rul_1', patch: { name: 'ONE' }, now: NOW }), [
    { type: 'RuleUpdated', data: { name: 'ONE', actions: [{ type: 'reject' }] } },
  ]);
  t.same(decideUpdateRule(s, { ruleId: 'rul_1', patch: { name: 'One' }, now: NOW }), [], 'nothing changed');
  t.match(
    refusal(() => decideUpdateRule(s, { ruleId: 'rul_9', patch: {}, now: NOW })),
    {
      code: 'resource_not_found',
    },
  );
});

t.test('reorder: every rule of the mailbox exactly once', async (t) => {
  let s = given([]);
  for (const id of ['rul_1', 'rul_2', 'rul_3']) s = given(create(s, id, { name: id }), s);
  s = given(create(s, 'rul_9', { name: 'elsewhere' }, { ...BOX, address: 'bob@example.com' }), s);
  const reorder = (ruleIds: string[]) => decideReorderRules(s, { mailbox: BOX.address, ruleIds, now: NOW });
  for (const ids of [
    ['rul_3', 'rul_1'],
    ['rul_3', 'rul_1', 'rul_1'],
    ['rul_3', 'rul_1', 'rul_2', 'rul_9'],
    ['rul_3', 'rul_1', 'rul_9'],
  ])
    t.match(
      refusal(() => reorder(ids)),
      { code: 'incomplete_order', param: 'ruleIds' },
      ids.join(','),
    );
  s = given(reorder(['rul_3', 'rul_1', 'rul_2']), s);
  t.same(
    ['rul_1', 'rul_2', 'rul_3', 'rul_9'].map((id) => s.rules.get(id)?.position),
    [1, 2, 0, 0],
  );
});

t.test('runs are recorded once; replies once per sender in 24 hours', async (t) => {
  const run = {
    runId: 'rrn_1',
    mailbox: BOX.address,
    threadId: null,
    messageId: null,
    headerMessageId: null,
    mailFrom: 'a@b.test',
    rejected: true,
    matched: [],
    at: NOW,
  };
  const recorded = decideRecordRun(ruleRunAggregate.initialState, run);
  t.equal(recorded.length, 1);
  t.same(decideRecordRun(recorded.reduce(ruleRunAggregate.evolve, ruleRunAggregate.initialState), run), []);
  const reply = { mailbox: BOX.address, sender: 'a@b.test', ruleId: 'rul_1' };
  const first = decideAllowReply(ruleReplyAggregate.initialState, { ...reply, now: NOW });
  t.match(first, [{ type: 'RuleReplyAllowed', data: { at: NOW } }]);
  const s = first.reduce(ruleReplyAggregate.evolve, ruleReplyAggregate.initialState);
  t.same(decideAllowReply(s, { ...reply, now: '2026-11-27T09:59:59.999Z' }), [], 'within 24 hours: no reply');
  t.equal(decideAllowReply(s, { ...reply, now: '2026-11-27T10:00:00.000Z' }).length, 1, '24 hours on: again');
});

const facts = (f: Partial<MessageFacts> = {}): MessageFacts => ({
  mailFrom: 'olga@outside.test',
  from: 'olga@outside.test',
  size: 2000,
  spam: false,
  headers: [
    { name: 'Subject', value: 'Invoice 42 for November' },
    { name: 'X-Tag', value: 'one' },
    { name: 'X-Tag', value: 'two' },
  ],
  attachments: [],
  ...f,
});
let n = 0;
const stored = (r: Partial<RuleToEvaluate>): RuleToEvaluate => ({
  ...rule(),
  position: 0,
  ruleId: `rul_${++n}`,
  createdAt: NOW,
  ...r,
});
const matches = (c: Partial<Condition>, f: Partial<MessageFacts> = {}, now = NOW, timeZone = 'UTC') =>
  evaluateRules([stored({ conditions: [cond(c)] })], facts(f), { now, timeZone }).matched.length === 1;

t.test('given a message, when a condition is evaluated, then each field and operator answers', async (t) => {
  t.ok(matches({ field: 'has_attachment', value: 'true' }, { attachments: [10] }));
  t.ok(matches({ field: 'has_attachment', value: 'false' }));
  t.ok(matches({ field: 'spam', value: 'true' }, { spam: true }));
  t.notOk(matches({ field: 'spam', value: 'true' }));
  t.ok(matches({ field: 'bounced', value: 'true' }, { mailFrom: '' }));
  t.ok(matches({ field: 'bounced', value: 'false' }));
  t.ok(matches({ field: 'attachment_size', op: 'gt', value: '99' }, { attachments: [50, 50] }), 'the total');
  t.notOk(matches({ field: 'attachment_size', op: 'gt', value: '100' }, { attachments: [50, 50] }), 'gt is strict');
  t.ok(matches({ field: 'message_size', op: 'lt', value: '2001' }));
  t.notOk(matches({ field: 'message_size', op: 'lt', value: '2000' }));
  t.ok(matches({ field: 'message_size', op: 'equals', value: '2000' }));
  t.ok(matches({ field: 'hour', value: '10' }));
  t.ok(matches({ field: 'hour', value: '11' }, {}, NOW, 'Europe/Berlin'), 'in the mailbox time zone');
  t.ok(matches({ field: 'weekday', value: '4' }), '2026-11-26 is a Thursday');
  t.ok(
    matches({ field: 'weekday', value: '3' }, {}, '2026-11-26T02:00:00Z', 'America/New_York'),
    'still Wednesday there',
  );
  t.ok(matches({ field: 'envelope_from', value: 'OLGA@outside.TEST' }), 'equals ignores case');
  t.ok(matches({ field: 'envelope_from', op: 'matches', value: '*@OUTSIDE.test' }));
  t.notOk(matches({ field: 'envelope_from', op: 'matches', value: '*@outside' }), 'the whole value');
  t.ok(matches({ field: 'header', header: 'subject', op: 'matches', value: 'invoice ?? for *' }));
  t.notOk(
    matches({ field: 'header', header: 'subject', op: 'matches', value: 'invoice ? for *' }),
    '? is one character',
  );
  t.ok(matches({ field: 'header', header: 'X-Tag', value: 'two' }), 'any of a repeated header');
  t.notOk(matches({ field: 'header', header: 'X-Missing', value: 'two' }), 'a missing header matches nothing');
  t.ok(matches({ field: 'header', header: 'X-Missing', value: 'two', negate: true }), 'negated: it does');
  t.ok(
    matches({ field: 'header', header: 'subject', op: 'matches', value: 'a.b (c)+*', negate: true }),
    'regex characters are literal',
  );
  t.ok(globMatches('a.b (c)+*', 'A.B (C)+ yes'));
});

t.test('given rules in order, then match all/any, negate and stopProcessing decide the run', async (t) => {
  const spamNo = cond({ field: 'spam', value: 'true' });
  const fromOlga = cond({ field: 'envelope_from', value: 'olga@outside.test' });
  const rules = [
    stored({
      ruleId: 'rul_c',
      name: 'C',
      position: 2,
      conditions: [fromOlga],
      actions: [{ type: 'label', value: 'c' }],
    }),
    stored({ ruleId: 'rul_a', name: 'A', position: 0, match: 'all', conditions: [spamNo, fromOlga] }),
    stored({
      ruleId: 'rul_b',
      name: 'B',
      position: 1,
      match: 'any',
      conditions: [spamNo, fromOlga],
      stopProcessing: true,
    }),
    stored({ ruleId: 'rul_off', name: 'Off', position: 0, enabled: false, conditions: [fromOlga] }),
  ];
  const run = evaluateRules(rules, facts(), { now: NOW, timeZone: 'UTC' });
  t.same(
    run.results.map((r) => [r.ruleId, r.matched, r.conditions]),
    [
      ['rul_a', false, [false, true]],
      ['rul_b', true, [false, true]],
    ],
    'disabled rules are skipped; B stops the run before C',
  );
  t.same(
    run.matched.map((m) => m.ruleId),
    ['rul_b'],
  );
  t.equal(run.stoppedBy, 'rul_b');
  const tie = evaluateRules(
    [
      stored({ ruleId: 'rul_2', position: 0, createdAt: '2026-01-02' }),
      stored({ ruleId: 'rul_1', position: 0, createdAt: '2026-01-03' }),
    ],
    facts({ mailFrom: 'x@y.test' }),
    { now: NOW, timeZone: 'UTC' },
  );
  t.same(
    tie.matched.map((m) => m.ruleId),
    ['rul_2', 'rul_1'],
    'same position: older first',
  );
});

t.test('bounces and automatic mail get no automatic reply', async (t) => {
  t.equal(noReplyReason(facts()), null);
  t.ok(isBounce(facts({ mailFrom: 'MAILER-DAEMON@mx.outside.test' })));
  t.ok(
    isBounce(
      facts({
        headers: [{ name: 'Content-Type', value: 'multipart/report; report-type=delivery-status; boundary="x"' }],
      }),
    ),
  );
  t.match(noReplyReason(facts({ mailFrom: '' })), /bounce/);
  t.match(noReplyReason(facts({ headers: [{ name: 'Auto-Submitted', value: 'auto-replied' }] })), /Auto-Submitted/);
  t.equal(noReplyReason(facts({ headers: [{ name: 'Auto-Submitted', value: 'No' }] })), null, '`no` is a person');
  for (const p of ['bulk', 'junk', 'list', 'auto_reply'])
    t.match(noReplyReason(facts({ headers: [{ name: 'Precedence', value: p }] })), /Precedence/, p);
  t.equal(noReplyReason(facts({ headers: [{ name: 'Precedence', value: 'first-class' }] })), null);
  t.match(noReplyReason(facts({ headers: [{ name: 'List-Id', value: '<l.outside.test>' }] })), /List-Id/);
  t.same(clockIn('2026-11-29T23:30:00Z', 'Asia/Tokyo'), { hour: 8, weekday: 1 });
});
