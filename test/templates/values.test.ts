import t from 'tap';
import { DomainError } from '../../domain/shared/errors.ts';
import type { Prop, Slot } from '../../domain/templates/document.ts';
import { resolveValues, sampleValues, type GivenValues } from '../../domain/templates/values.ts';

const prop = (name: string, extra: Partial<Prop> = {}): Prop => ({
  name,
  type: 'string',
  required: false,
  default: null,
  description: null,
  ...extra,
});
const slot = (name: string, extra: Partial<Slot> = {}): Slot => ({ name, description: null, default: null, ...extra });

const PROPS = [
  prop('first_name', { required: true }),
  prop('count', { type: 'number', default: 3 }),
  prop('vip', { type: 'boolean' }),
  prop('cta', { type: 'url', default: 'https://example.com/start' }),
  prop('note'),
];
const SLOTS = [slot('company', { default: 'Acme' }), slot('season')];

/** When the values are resolved, then the refusal's code and param. */
function refusal(
  given: GivenValues,
  props: Prop[] = PROPS,
  slots: Slot[] = SLOTS,
): { code: string; param: string | null } | null {
  try {
    resolveValues(props, slots, given);
    return null;
  } catch (e) {
    if (!(e instanceof DomainError)) throw e;
    return { code: e.code, param: e.param };
  }
}

t.test('given values are written as strings; the rest take their defaults', async (t) => {
  t.same(
    {
      ...resolveValues(PROPS, SLOTS, {
        props: { first_name: 'Ada', count: 2.5, vip: true, note: null },
        slots: { season: 'winter' },
      }),
    },
    {
      first_name: 'Ada',
      count: '2.5',
      vip: 'true',
      cta: 'https://example.com/start',
      note: '',
      company: 'Acme',
      season: 'winter',
    },
  );
  t.same(
    { ...resolveValues(PROPS, SLOTS, { props: { first_name: 'Ada', vip: false, cta: 'mailto:a@example.com' } }) },
    {
      first_name: 'Ada',
      count: '3',
      vip: 'false',
      cta: 'mailto:a@example.com',
      note: '',
      company: 'Acme',
      season: '',
    },
  );
});

t.test('a required prop with a default may be left out', async (t) => {
  t.same({ ...resolveValues([prop('p', { required: true, default: 'x' })], [], {}) }, { p: 'x' });
});

t.test('unknown_template_prop: a prop the version does not declare', async (t) => {
  t.same(refusal({ props: { first_name: 'Ada', last_name: 'L' } }), {
    code: 'unknown_template_prop',
    param: 'props.last_name',
  });
  t.same(
    refusal({ props: { company: 'x' } }),
    { code: 'unknown_template_prop', param: 'props.company' },
    'a slot is not a prop',
  );
});

t.test('unknown_template_slot: a slot the version does not declare', async (t) => {
  t.same(refusal({ props: { first_name: 'Ada' }, slots: { weather: 'x' } }), {
    code: 'unknown_template_slot',
    param: 'slots.weather',
  });
  t.same(refusal({ props: { first_name: 'Ada' }, slots: { first_name: 'x' } }), {
    code: 'unknown_template_slot',
    param: 'slots.first_name',
  });
});

t.test('invalid_parameter: a value of the wrong type', async (t) => {
  const cases: [Record<string, unknown>, string][] = [
    [{ first_name: 42 }, 'props.first_name'],
    [{ count: '3' }, 'props.count'],
    [{ count: Number.NaN }, 'props.count'],
    [{ vip: 'yes' }, 'props.vip'],
    [{ vip: 1 }, 'props.vip'],
    [{ cta: 'javascript:alert(1)' }, 'props.cta'],
    [{ cta: '/relative' }, 'props.cta'],
    [{ cta: 'https://exa mple.com' }, 'props.cta'],
    [{ cta: 7 }, 'props.cta'],
    [{ note: { html: '<b>' } }, 'props.note'],
  ];
  for (const [props, param] of cases) {
    t.same(
      refusal({ props: { first_name: 'Ada', ...props } }),
      { code: 'invalid_parameter', param },
      JSON.stringify(props),
    );
  }
  t.same(refusal({ props: { first_name: 'Ada' }, slots: { season: 3 } }), {
    code: 'invalid_parameter',
    param: 'slots.season',
  });
});

t.test('invalid_parameter: a required prop missing with no default', async (t) => {
  t.same(refusal({}), { code: 'invalid_parameter', param: 'props.first_name' });
  t.same(
    refusal({ props: { first_name: null } }),
    { code: 'invalid_parameter', param: 'props.first_name' },
    'null counts as not given',
  );
});

t.test('names that are also Object.prototype members are plain names', async (t) => {
  const props = [prop('__proto__'), prop('constructor'), prop('toString')];
  const given = JSON.parse('{"__proto__": "a", "constructor": "b"}') as Record<string, unknown>;
  const values = resolveValues(props, [], { props: given });
  // biome-ignore lint/suspicious/noProto: an own value under the name __proto__ is what is tested
  t.same([values.__proto__, values.constructor, values.toString], ['a', 'b', '']);
  t.same(refusal({ props: JSON.parse('{"first_name": "Ada", "hasOwnProperty": "x"}') }), {
    code: 'unknown_template_prop',
    param: 'props.hasOwnProperty',
  });
});

t.test('sampleValues: given, then the default, then a sample of the type', async (t) => {
  const props = [
    prop('name', { required: true }),
    prop('count', { type: 'number', default: 3 }),
    prop('vip', { type: 'boolean' }),
    prop('link', { type: 'url' }),
    prop('age', { type: 'number' }),
  ];
  const slots = [slot('teaser', { default: 'News' }), slot('tagline')];
  const sampled = sampleValues(props, slots, { props: { age: 7, name: null }, slots: { tagline: 'Hi' } });
  t.same({ ...sampled.props }, { age: 7, name: '[name]', count: 3, vip: true, link: 'https://example.com/' });
  t.same({ ...sampled.slots }, { tagline: 'Hi', teaser: 'News' });
  t.same(resolveValues(props, slots, sampled).name, '[name]', 'a required prop previews');
  const unknown = sampleValues(props, slots, { props: { nope: 1 } });
  t.throws(() => resolveValues(props, slots, unknown), { code: 'unknown_template_prop', param: 'props.nope' });
  t.same(
    Object.keys(sampleValues([prop('__proto__')], [], {}).props),
    ['__proto__'],
    'a prop named __proto__ is a value like any other',
  );
});
