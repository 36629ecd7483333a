import { z } from 'zod';
import { EVENT_NAME_MAX, EVENT_NAME_PATTERN } from '../contact-events/rules.ts';

/** A year: waits and timeouts longer than this are refused. */
export const MINUTES_MAX = 525_600;
export const STEPS_MAX = 50;
export const BRANCH_DEPTH_MAX = 5;
export const FILTERS_MAX = 20;
export const FILTER_OPS = ['equals', 'not_equals', 'exists', 'not_exists', 'contains', 'gt', 'lt'] as const;

export const eventName = z
  .string()
  .min(1)
  .max(EVENT_NAME_MAX)
  .regex(EVENT_NAME_PATTERN, 'letters, digits, dots, colons, dashes and underscores, starting with a letter or digit');
const minutes = z.number().int().min(1).max(MINUTES_MAX);
const scalar = z.union([z.string().max(500), z.number(), z.boolean()]);

export const filterSchema = z
  .strictObject({ property: z.string().min(1).max(64), op: z.enum(FILTER_OPS), value: scalar.optional() })
  .refine((f) => (f.op === 'exists' || f.op === 'not_exists' ? f.value === undefined : f.value !== undefined), {
    message: '`value` is required by this op, and refused by `exists`/`not_exists`',
    path: ['value'],
  })
  .refine((f) => (f.op === 'gt' || f.op === 'lt' ? typeof f.value === 'number' : true), {
    message: '`gt`/`lt` compare numbers',
    path: ['value'],
  });
export type Filter = z.infer<typeof filterSchema>;

export const triggerSchema = z.strictObject({
  event: eventName,
  filters: z.array(filterSchema).max(FILTERS_MAX).default([]),
});
export type Trigger = z.infer<typeof triggerSchema>;

export type Step =
  | { type: 'wait_for_event'; name: string; timeoutMinutes: number }
  | { type: 'wait'; minutes: number }
  | { type: 'branch'; ifEvent: string; withinMinutes?: number; then: Step[]; else: Step[] }
  | { type: 'send'; template: string; from?: string; subject?: string; data?: Record<string, unknown> };

export const stepSchema: z.ZodType<Step> = z
  .lazy(() =>
    z.discriminatedUnion('type', [
      z.strictObject({ type: z.literal('wait_for_event'), name: eventName, timeoutMinutes: minutes }),
      z.strictObject({ type: z.literal('wait'), minutes }),
      z.strictObject({
        type: z.literal('branch'),
        ifEvent: eventName,
        withinMinutes: minutes.optional(),
        then: z.array(stepSchema).max(STEPS_MAX),
        else: z.array(stepSchema).max(STEPS_MAX),
      }),
      z.strictObject({
        type: z.literal('send'),
        template: z.string().min(1).max(100).describe('A template id or slug; sends its published version.'),
        from: z
          .string()
          .max(998)
          .optional()
          .describe(
            'The sending address (an enabled address of the workspace); without it the send is refused and the refusal shows on the send.',
          ),
        subject: z.string().max(998).optional(),
        data: z
          .record(z.string(), z.unknown())
          .optional()
          .describe("Props for the template; the triggering event's properties (less `email`) fill the rest."),
      }),
    ]),
  )
  .meta({ id: 'AutomationStep', description: 'One step of an automation, discriminated by `type`.' });

export const stepsSchema = z
  .array(stepSchema)
  .max(STEPS_MAX)
  .superRefine((steps, ctx) => {
    const { count, depth } = measure(steps);
    if (count > STEPS_MAX)
      ctx.addIssue({ code: 'custom', message: `at most ${STEPS_MAX} steps in all, branches included` });
    if (depth > BRANCH_DEPTH_MAX)
      ctx.addIssue({ code: 'custom', message: `branches nest at most ${BRANCH_DEPTH_MAX} deep` });
  });

function measure(steps: Step[]): { count: number; depth: number } {
  let count = 0;
  let depth = 0;
  for (const s of steps) {
    count++;
    if (s.type === 'branch') {
      const a = measure(s.then);
      const b = measure(s.else);
      count += a.count + b.count;
      depth = Math.max(depth, 1 + Math.max(a.depth, b.depth));
    }
  }
  return { count, depth };
}

/**
 * The steps flattened to instructions a run walks with one program counter: a branch jumps to its
 * `else` part when the event is absent, and its `then` part ends with a jump past the `else` part.
 * A run's place is then one integer, stored in its row.
 */
export type Instruction =
  | { op: 'wait_for_event'; name: string; timeoutMinutes: number }
  | { op: 'wait'; minutes: number }
  | { op: 'branch'; ifEvent: string; withinMinutes: number | null; elseAt: number }
  | { op: 'send'; template: string; from?: string | null; subject: string | null; data: Record<string, unknown> }
  | { op: 'jump'; to: number };

export function compile(steps: Step[]): Instruction[] {
  const out: Instruction[] = [];
  const emit = (list: Step[]) => {
    for (const s of list) {
      switch (s.type) {
        case 'wait_for_event':
          out.push({ op: 'wait_for_event', name: s.name, timeoutMinutes: s.timeoutMinutes });
          break;
        case 'wait':
          out.push({ op: 'wait', minutes: s.minutes });
          break;
        case 'send':
          out.push({
            op: 'send',
            template: s.template,
            from: s.from ?? null,
            subject: s.subject ?? null,
            data: s.data ?? {},
          });
          break;
        case 'branch': {
          const branch: Instruction & { op: 'branch' } = {
            op: 'branch',
            ifEvent: s.ifEvent,
            withinMinutes: s.withinMinutes ?? null,
            elseAt: -1,
          };
          out.push(branch);
          emit(s.then);
          const jump: Instruction & { op: 'jump' } = { op: 'jump', to: -1 };
          out.push(jump);
          branch.elseAt = out.length;
          emit(s.else);
          jump.to = out.length;
          break;
        }
      }
    }
  };
  emit(steps);
  return out;
}

/** Does an event's properties (less `email`) pass every filter of a trigger? */
export function matches(filters: readonly Filter[], properties: Record<string, unknown>): boolean {
  return filters.every((f) => passes(f, properties));
}

function passes(f: Filter, properties: Record<string, unknown>): boolean {
  const has = Object.hasOwn(properties, f.property) && f.property !== 'email';
  const v = has ? properties[f.property] : undefined;
  switch (f.op) {
    case 'exists':
      return has && v !== null;
    case 'not_exists':
      return !has || v === null;
    case 'equals':
      return has && v === f.value;
    case 'not_equals':
      return !has || v !== f.value;
    case 'contains':
      return typeof v === 'string' && v.includes(String(f.value));
    case 'gt':
      return typeof v === 'number' && v > (f.value as number);
    case 'lt':
      return typeof v === 'number' && v < (f.value as number);
  }
}
