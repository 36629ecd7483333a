/**
 * The values a send gives a template's props and slots, checked against what the version declares
 * and turned into the string each `{{placeholder}}` becomes. Pure.
 */
import { fail } from '../shared/errors.ts';
import { isUrlValue, type Prop, type Slot } from './document.ts';

export interface GivenValues {
  props?: Record<string, unknown>;
  slots?: Record<string, unknown>;
}

type Loose = Record<string, unknown>;

const has = (o: Record<string, unknown> | undefined, key: string) =>
  o !== undefined && o !== null && Object.hasOwn(o, key);
const text = (v: unknown): string => (v === null || v === undefined ? '' : String(v));

/** The string a typed value becomes: numbers in their shortest round-trip form, booleans as true/false. */
function typed(prop: Pick<Prop, 'name' | 'type'>, value: unknown): string {
  const bad = (what: string): never =>
    fail('invalid_parameter', `The prop \`${prop.name}\` takes ${what}.`, `props.${prop.name}`);
  switch (prop.type) {
    case 'number':
      if (typeof value !== 'number' || !Number.isFinite(value)) bad('a number');
      return String(value);
    case 'boolean':
      if (typeof value !== 'boolean') bad('a boolean');
      return String(value);
    case 'url':
      if (typeof value !== 'string' || !isUrlValue(value)) bad('an absolute http(s) or mailto address');
      return value as string;
    default:
      if (typeof value !== 'string') bad('a string');
      return value as string;
  }
}

/**
 * Checks `given` against the declared props and slots and answers the string for every declared
 * name (a prop and a slot never share one). A value given as null counts as not given. Throws:
 *   unknown_template_prop (`props.<name>`)  a prop the version does not declare
 *   unknown_template_slot (`slots.<name>`)  a slot the version does not declare
 *   invalid_parameter (`props.<name>`)      a value of the wrong type, or a required prop missing
 *   invalid_parameter (`slots.<name>`)      a slot value that is not a string
 * A prop or slot not given takes its default; a null default is the empty string.
 */
export function resolveValues(
  props: readonly (Prop | Loose)[],
  slots: readonly (Slot | Loose)[],
  given: GivenValues,
): Record<string, string> {
  const declaredProps = new Map<string, Prop>();
  for (const p of props) {
    const prop = p as Partial<Prop>;
    if (typeof prop.name !== 'string') continue;
    declaredProps.set(prop.name, {
      name: prop.name,
      type: prop.type ?? 'string',
      required: prop.required ?? false,
      default: prop.default ?? null,
      description: prop.description ?? null,
    });
  }
  const declaredSlots = new Map<string, Slot>();
  for (const s of slots) {
    const slot = s as Partial<Slot>;
    if (typeof slot.name !== 'string') continue;
    declaredSlots.set(slot.name, {
      name: slot.name,
      description: slot.description ?? null,
      default: slot.default ?? null,
    });
  }

  const givenProps = given.props ?? {};
  const givenSlots = given.slots ?? {};
  for (const name of Object.keys(givenProps)) {
    if (!declaredProps.has(name))
      fail('unknown_template_prop', `The template has no prop \`${name}\`.`, `props.${name}`);
  }
  for (const name of Object.keys(givenSlots)) {
    if (!declaredSlots.has(name))
      fail('unknown_template_slot', `The template has no slot \`${name}\`.`, `slots.${name}`);
  }

  // Null prototype: a prop may be named `__proto__` or `constructor`.
  const values: Record<string, string> = Object.create(null);
  for (const prop of declaredProps.values()) {
    const value = has(givenProps, prop.name) ? givenProps[prop.name] : null;
    if (value !== null && value !== undefined) {
      values[prop.name] = typed(prop, value);
    } else if (prop.default !== null) {
      values[prop.name] = text(prop.default);
    } else if (prop.required) {
      fail('invalid_parameter', `The prop \`${prop.name}\` is required.`, `props.${prop.name}`);
    } else {
      values[prop.name] = '';
    }
  }
  for (const slot of declaredSlots.values()) {
    const value = has(givenSlots, slot.name) ? givenSlots[slot.name] : null;
    if (value !== null && value !== undefined && typeof value !== 'string') {
      fail('invalid_parameter', `The slot \`${slot.name}\` takes a string.`, `slots.${slot.name}`);
    }
    values[slot.name] = typeof value === 'string' ? value : text(slot.default);
  }
  return values;
}

/** What a preview shows for a prop nobody gave and that has no default: a value of its type, visibly a sample. */
const SAMPLES: Record<Prop['type'], (name: string) => string | number | boolean> = {
  string: (name) => `[${name}]`,
  number: () => 42,
  boolean: () => true,
  url: () => 'https://example.com/',
};

/**
 * The values a preview renders with: the given ones, then each declared prop's and slot's default,
 * then a sample of its type (`[name]`, 42, true, `https://example.com/`), so a required prop
 * without a default previews instead of being refused. Undeclared names stay for
 * `resolveValues` to refuse.
 */
export function sampleValues(
  props: readonly (Prop | Loose)[],
  slots: readonly (Slot | Loose)[],
  given: GivenValues,
): { props: Record<string, unknown>; slots: Record<string, unknown> } {
  const filled = (declared: readonly Loose[], values: Record<string, unknown>, sample: (d: Loose) => unknown) => {
    const out: Record<string, unknown> = Object.create(null);
    Object.assign(out, values);
    for (const d of declared) {
      const name = d.name;
      if (typeof name !== 'string') continue;
      if (out[name] !== undefined && out[name] !== null) continue;
      out[name] = d.default ?? sample(d);
    }
    return out;
  };
  return {
    props: filled(props as Loose[], given.props ?? {}, (p) =>
      (SAMPLES[(p.type as Prop['type']) ?? 'string'] ?? SAMPLES.string)(String(p.name)),
    ),
    slots: filled(slots as Loose[], given.slots ?? {}, (s) => `[${String(s.name)}]`),
  };
}
