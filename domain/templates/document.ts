/**
 * The blocks engine's document: a tree of blocks (React Email components by name), the fonts,
 * preview line, slots and props of a template, and the rules a template's placeholders obey.
 *
 * Pure: zod only. The schemas feed request validation and the OpenAPI document alike
 * (`z.toJSONSchema(..., {io: 'input'})` represents every one of them).
 */
import { z } from 'zod';

/** Spec limits (Limits: Template). */
export const SUBJECT_MAX = 998;
export const HTML_MAX = 1_000_000;
export const PREVIEW_MAX = 256;
export const BLOCKS_MAX = 500;
export const DEPTH_MAX = 8;
export const FONTS_MAX = 8;
/** Our limits where the spec is silent. */
export const TEXT_MAX = 10_000;
export const URL_MAX = 2_048;
export const PROPS_MAX = 50;
export const SLOTS_MAX = 20;
export const STYLE_VALUE_MAX = 200;
export const DESCRIPTION_MAX = 200;
export const SLOT_DEFAULT_MAX = 998;

export type Path = (string | number)[];

// ---------------------------------------------------------------------------------------------
// Placeholders

export const NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
/** `{{ name }}`: a name as props and slots are named, whitespace allowed inside the braces. */
export const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_]{0,63})\s*\}\}/g;
const WHOLE_PLACEHOLDER = /^\{\{\s*([A-Za-z_][A-Za-z0-9_]{0,63})\s*\}\}$/;

/** The names used as `{{ name }}` in `text`, each once, in order of first use. */
export function placeholders(text: string): string[] {
  const names = new Set<string>();
  for (const m of text.matchAll(PLACEHOLDER)) names.add(m[1]!);
  return [...names];
}

/** The name when the whole of `text` is one placeholder (an href or src given as `{{url}}`), else null. */
export function wholePlaceholder(text: string): string | null {
  return WHOLE_PLACEHOLDER.exec(text)?.[1] ?? null;
}

// ---------------------------------------------------------------------------------------------
// Style: the CSS properties mail clients honour, camelCase or kebab-case

const SIDES = ['top', 'right', 'bottom', 'left'] as const;
const CORNERS = ['top-left', 'top-right', 'bottom-right', 'bottom-left'] as const;

/** Kebab-case names of the properties a block's style (and sanitised html's inline styles) may set. */
export const STYLE_PROPERTIES: readonly string[] = [
  'color',
  'background',
  'background-color',
  'background-image',
  'background-repeat',
  'background-position',
  'background-size',
  'font-family',
  'font-size',
  'font-weight',
  'font-style',
  'line-height',
  'letter-spacing',
  'text-align',
  'text-decoration',
  'text-transform',
  'vertical-align',
  'white-space',
  'word-break',
  'direction',
  'padding',
  ...SIDES.map((s) => `padding-${s}`),
  'margin',
  ...SIDES.map((s) => `margin-${s}`),
  'border',
  'border-color',
  'border-width',
  'border-style',
  'border-radius',
  'border-collapse',
  'border-spacing',
  ...SIDES.flatMap((s) => [`border-${s}`, `border-${s}-color`, `border-${s}-width`, `border-${s}-style`]),
  ...CORNERS.map((c) => `border-${c}-radius`),
  'width',
  'min-width',
  'max-width',
  'height',
  'min-height',
  'max-height',
  'display',
  'table-layout',
  'list-style-type',
  'opacity',
];

const kebabToCamel = (k: string) => k.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

/** Every accepted spelling of a style key mapped to its kebab-case property. */
const STYLE_KEYS = new Map<string, string>(
  STYLE_PROPERTIES.flatMap((p) => [[p, p] as const, [kebabToCamel(p), p] as const]),
);

/** The kebab-case property a style key names, or null when it is not one mail clients honour. */
export function styleProperty(key: string): string | null {
  return STYLE_KEYS.get(key) ?? null;
}

/** Why a style value is refused, or null when it is fine. Also used by the html sanitiser. */
export function unsafeStyleValue(value: string): string | null {
  if (value.length > STYLE_VALUE_MAX) return `A style value is at most ${STYLE_VALUE_MAX} characters.`;
  if (/[;{}<>\\]/.test(value)) return 'A style value may not contain ; { } < > or \\.';
  if (value.includes('/*')) return 'A style value may not contain comments.';
  const lower = value.toLowerCase();
  if (lower.includes('expression(')) return 'A style value may not use expression().';
  if (lower.includes('javascript:')) return 'A style value may not use javascript:.';
  for (const m of lower.matchAll(/url\(\s*(['"]?)/g)) {
    if (!lower.startsWith('https://', m.index + m[0].length))
      return 'A style value may use url() only with an https:// address.';
  }
  return null;
}

const styleValueSchema = z.union([z.string(), z.number()]).check((ctx) => {
  if (typeof ctx.value !== 'string') return;
  const problem = unsafeStyleValue(ctx.value);
  if (problem) ctx.issues.push({ code: 'custom', message: problem, input: ctx.value });
});

const STYLE_KEY_PATTERN = new RegExp(`^(?:${[...STYLE_KEYS.keys()].join('|')})$`);

/**
 * Inline CSS of a block, the document's body, or an html part: keys in camelCase or kebab-case
 * from the allowlist; a refused key fails at its own path (`[..., 'style', 'position']`).
 */
export const styleSchema = z
  .record(z.string().regex(STYLE_KEY_PATTERN), styleValueSchema, {
    error: (issue) => (issue.code === 'invalid_key' ? 'Not a style property mail clients honour.' : undefined),
  })
  .check((ctx) => {
    const seen = new Set<string>();
    for (const key of Object.keys(ctx.value)) {
      const property = styleProperty(key);
      if (property === null) continue;
      if (seen.has(property)) {
        ctx.issues.push({ code: 'custom', message: `\`${property}\` is given twice.`, path: [key], input: ctx.value });
      }
      seen.add(property);
    }
  })
  .meta({ description: 'Inline CSS: property names in camelCase or kebab-case, limited to what mail clients honour.' });
export type Style = Record<string, string | number>;

// ---------------------------------------------------------------------------------------------
// URLs

const SAFE_URL_CHARS = /^[^\s"'<>\\]+$/;
function hrefProblem(value: string, schemes: 'link' | 'image'): string | null {
  if (wholePlaceholder(value) !== null) return null;
  if (!SAFE_URL_CHARS.test(value)) return 'An address may not contain spaces, quotes, < > or \\.';
  const ok = schemes === 'link' ? /^(?:https?:\/\/[^/]|mailto:.)/i : /^https?:\/\/[^/]/i;
  if (!ok.test(value)) {
    return schemes === 'link'
      ? 'A link is an https://, http:// or mailto: address, or one {{placeholder}} naming a url prop.'
      : 'An image is an https:// or http:// address, or one {{placeholder}} naming a url prop.';
  }
  return null;
}
const urlField = (schemes: 'link' | 'image') =>
  z
    .string()
    .min(1)
    .max(URL_MAX)
    .check((ctx) => {
      const problem = hrefProblem(ctx.value, schemes);
      if (problem) ctx.issues.push({ code: 'custom', message: problem, input: ctx.value });
    });
const hrefSchema = urlField('link');
const srcSchema = urlField('image');

/** An absolute https address for a font file, safe to write into CSS `url(...)`. */
const fontUrlSchema = z
  .string()
  .max(URL_MAX)
  .regex(
    /^https:\/\/[^\s"'()<>\\{};]+$/i,
    'A font url is an https:// address without spaces, quotes, parentheses or < > { } ;.',
  );

// ---------------------------------------------------------------------------------------------
// Blocks

/** The Prism languages CodeBlock renders (each is one react-email's CodeBlock knows). */
export const CODE_LANGUAGES = [
  'plaintext',
  'bash',
  'c',
  'cpp',
  'csharp',
  'css',
  'diff',
  'go',
  'graphql',
  'html',
  'java',
  'javascript',
  'json',
  'jsx',
  'kotlin',
  'markdown',
  'markup',
  'php',
  'python',
  'ruby',
  'rust',
  'shell',
  'sql',
  'swift',
  'tsx',
  'typescript',
  'xml',
  'yaml',
] as const;
export type CodeLanguage = (typeof CODE_LANGUAGES)[number];

export const CONTAINER_KINDS = ['Section', 'Row', 'Column', 'Container'] as const;
export type ContainerKind = (typeof CONTAINER_KINDS)[number];

/** Fields of a block that may hold `{{prop}}` placeholders (Img's alt included). */
export const PLACEHOLDER_FIELDS = ['text', 'href', 'src', 'alt', 'markdown', 'code'] as const;

type WithStyle = { style?: Style; className?: string };
export type ContainerBlock = WithStyle & { kind: ContainerKind; children: Block[] };
export type Block =
  | ContainerBlock
  | (WithStyle & { kind: 'Text'; text: string })
  | (WithStyle & { kind: 'Heading'; text: string; level: 1 | 2 | 3 | 4 | 5 | 6 })
  | (WithStyle & { kind: 'Button'; text: string; href: string })
  | (WithStyle & { kind: 'Link'; text: string; href: string })
  | (WithStyle & { kind: 'Img'; src: string; alt: string; width?: number; height?: number })
  | (WithStyle & { kind: 'Hr' })
  | (WithStyle & { kind: 'Markdown'; markdown: string })
  | (WithStyle & { kind: 'CodeBlock'; code: string; language: CodeLanguage })
  | (WithStyle & { kind: 'CodeInline'; code: string });
/** What a client may send: the fields with defaults are optional. */
export type BlockInput =
  | (WithStyle & { kind: ContainerKind; children: BlockInput[] })
  | Exclude<Block, ContainerBlock | { kind: 'Heading' } | { kind: 'Img' } | { kind: 'CodeBlock' }>
  | (WithStyle & { kind: 'Heading'; text: string; level?: number })
  | (WithStyle & { kind: 'Img'; src: string; alt?: string; width?: number; height?: number })
  | (WithStyle & { kind: 'CodeBlock'; code: string; language?: CodeLanguage });

const text = z.string().max(TEXT_MAX);
const style = styleSchema.optional();
/** Tailwind utility classes, turned into inline styles when the document sets `tailwind: true`. */
const className = z
  .string()
  .max(1000)
  .regex(/^[A-Za-z0-9 _:/.#%()[\],-]*$/, 'Class names are letters, digits and the punctuation of Tailwind utilities.')
  .optional();
const dimension = z.number().int().positive().max(2000);

const container = (kind: ContainerKind) =>
  z.strictObject({
    kind: z.literal(kind),
    style,
    className,
    get children() {
      return z.array(blockSchema);
    },
  });

const blockOptions = [
  container('Section'),
  container('Row'),
  container('Column'),
  container('Container'),
  z.strictObject({ kind: z.literal('Text'), style, className, text }),
  z.strictObject({
    kind: z.literal('Heading'),
    style,
    className,
    text,
    level: z.number().int().min(1).max(6).default(2),
  }),
  z.strictObject({ kind: z.literal('Button'), style, className, text: text.min(1), href: hrefSchema }),
  z.strictObject({ kind: z.literal('Link'), style, className, text: text.min(1), href: hrefSchema }),
  z.strictObject({
    kind: z.literal('Img'),
    style,
    className,
    src: srcSchema,
    alt: z.string().max(TEXT_MAX).default(''),
    width: dimension.optional(),
    height: dimension.optional(),
  }),
  z.strictObject({ kind: z.literal('Hr'), style }),
  z.strictObject({ kind: z.literal('Markdown'), style, className, markdown: text }),
  z.strictObject({
    kind: z.literal('CodeBlock'),
    style,
    className,
    code: text,
    language: z.enum(CODE_LANGUAGES).default('plaintext'),
  }),
  z.strictObject({ kind: z.literal('CodeInline'), style, className, code: text }),
] as const;

/** One block, discriminated by `kind`; unknown keys are refused. */
export const blockSchema: z.ZodType<Block, BlockInput> = z.discriminatedUnion('kind', blockOptions).meta({
  id: 'TemplateBlock',
  description: 'One block of a template document, discriminated by `kind`.',
}) as unknown as z.ZodType<Block, BlockInput>;

// ---------------------------------------------------------------------------------------------
// Props, slots, fonts

const nameSchema = z.string().regex(NAME_PATTERN, 'A name is a letter or _ then up to 63 letters, digits or _.');

export const PROP_TYPES = ['string', 'number', 'boolean', 'url'] as const;

/** Is `value` acceptable for a url prop: an absolute http(s) or mailto address. */
export function isUrlValue(value: string): boolean {
  return value.length <= URL_MAX && SAFE_URL_CHARS.test(value) && /^(?:https?:\/\/[^/]|mailto:.)/i.test(value);
}

export const propSchema = z
  .strictObject({
    name: nameSchema,
    type: z.enum(PROP_TYPES).default('string'),
    required: z.boolean().default(false),
    default: z.union([z.string().max(TEXT_MAX), z.number(), z.boolean(), z.null()]).default(null),
    description: z.string().max(DESCRIPTION_MAX).nullable().default(null),
  })
  .check((ctx) => {
    const { type, default: value } = ctx.value;
    if (value === null) return;
    const fits = type === 'url' ? typeof value === 'string' && isUrlValue(value) : typeof value === type;
    if (!fits) {
      const what = type === 'url' ? 'an http(s) or mailto address' : `a ${type}`;
      ctx.issues.push({
        code: 'custom',
        message: `The default of a ${type} prop is ${what} or null.`,
        path: ['default'],
        input: value,
      });
    }
  });
export type Prop = z.output<typeof propSchema>;

export const slotSchema = z.strictObject({
  name: nameSchema,
  description: z.string().max(DESCRIPTION_MAX).nullable().default(null),
  default: z.string().max(SLOT_DEFAULT_MAX).nullable().default(null),
});
export type Slot = z.output<typeof slotSchema>;

function uniqueNames(kind: string) {
  return (ctx: { value: { name: string }[]; issues: z.core.$ZodRawIssue[] }) => {
    const seen = new Set<string>();
    ctx.value.forEach((item, i) => {
      if (seen.has(item.name)) {
        ctx.issues.push({
          code: 'custom',
          message: `Two ${kind}s are named \`${item.name}\`.`,
          path: [i, 'name'],
          input: item.name,
        });
      }
      seen.add(item.name);
    });
  };
}

/** A template's props (what its blocks or html fill in); names unique. */
export const propsSchema = z.array(propSchema).max(PROPS_MAX).check(uniqueNames('prop'));
/** A template's slots (the placeholders of its subject and preview line); names unique. */
export const slotsSchema = z.array(slotSchema).max(SLOTS_MAX).check(uniqueNames('slot'));

export const FONT_FALLBACKS = [
  'Arial',
  'Helvetica',
  'Verdana',
  'Georgia',
  'Times New Roman',
  'Courier New',
  'sans-serif',
  'serif',
  'monospace',
] as const;

export const fontSchema = z.strictObject({
  family: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[A-Za-z0-9 -]+$/, 'A font family is letters, digits, spaces and hyphens.'),
  url: fontUrlSchema.nullable().default(null),
  weight: z.number().int().min(100).max(900).multipleOf(100).default(400),
  style: z.enum(['normal', 'italic']).default('normal'),
  fallback: z.enum(FONT_FALLBACKS).default('sans-serif'),
});
export type Font = z.output<typeof fontSchema>;

// ---------------------------------------------------------------------------------------------
// The document

/**
 * Walks the raw body before zod does: the first block past the count or depth limit in
 * depth-first order, with its path. Iterative, so a hostile nesting cannot exhaust the stack
 * (zod's own recursion would, at about 1,600 levels).
 */
export function treeLimitProblem(body: unknown): { path: Path; message: string } | null {
  if (!Array.isArray(body)) return null;
  const stack: { node: unknown; path: Path; depth: number }[] = [];
  for (let i = body.length - 1; i >= 0; i--) stack.push({ node: body[i], path: ['body', i], depth: 1 });
  let count = 0;
  while (stack.length > 0) {
    const { node, path, depth } = stack.pop()!;
    count++;
    if (count > BLOCKS_MAX) return { path, message: `A document holds at most ${BLOCKS_MAX} blocks.` };
    if (depth > DEPTH_MAX) return { path, message: `Blocks nest at most ${DEPTH_MAX} levels deep.` };
    const children = (node as { children?: unknown } | null)?.children;
    if (node !== null && typeof node === 'object' && Array.isArray(children)) {
      for (let i = children.length - 1; i >= 0; i--)
        stack.push({ node: children[i], path: [...path, 'children', i], depth: depth + 1 });
    }
  }
  return null;
}

const documentObject = z
  .strictObject({
    body: z.array(blockSchema),
    preview: z.string().max(PREVIEW_MAX).optional(),
    tailwind: z.boolean().default(false),
    fonts: z.array(fontSchema).max(FONTS_MAX).optional(),
    style: styleSchema.optional(),
    slots: slotsSchema.optional(),
    props: propsSchema.optional(),
  })
  .check((ctx) => {
    const props = new Set((ctx.value.props ?? []).map((p) => p.name));
    (ctx.value.slots ?? []).forEach((s, i) => {
      if (props.has(s.name)) {
        ctx.issues.push({
          code: 'custom',
          message: `\`${s.name}\` names both a prop and a slot.`,
          path: ['slots', i, 'name'],
          input: s.name,
        });
      }
    });
  });

/**
 * A blocks-engine document. Before the tree is parsed, at most 500 blocks in all and 8 levels
 * (body is level 1) are enforced; the issue's path is that of the first block past the limit in
 * depth-first order.
 */
export const documentSchema = z.preprocess((input, ctx) => {
  if (input !== null && typeof input === 'object') {
    const problem = treeLimitProblem((input as { body?: unknown }).body);
    if (problem) ctx.issues.push({ code: 'custom', message: problem.message, path: problem.path, input });
  }
  return input;
}, documentObject);
export type Document = z.output<typeof documentObject>;

/** A subject line: up to 998 characters, no line breaks, `{{placeholders}}` allowed. */
export const subjectSchema = z
  .string()
  .max(SUBJECT_MAX)
  .regex(/^[^\r\n]*$/, 'A subject has no line breaks.');

/** The html engine's markup, as submitted (it is sanitised when published). */
export const htmlSchema = z.string().max(HTML_MAX);

// ---------------------------------------------------------------------------------------------
// References: every placeholder names something declared

type Loose = Record<string, unknown>;
export interface TemplateReferences {
  subject: string;
  document?: Loose | Document | null;
  html?: string | null;
  slots: readonly Loose[] | readonly Slot[];
  props: readonly Loose[] | readonly Prop[];
}
export interface ReferenceProblem {
  path: Path;
  message: string;
}

const nameOf = (x: unknown): string | null => {
  const n = (x as { name?: unknown } | null)?.name;
  return typeof n === 'string' ? n : null;
};

/**
 * The props and slots a template declares: its own lists plus those its document carries (a
 * document may bring its own `slots` and `props`).
 */
export function declarations(t: Pick<TemplateReferences, 'document' | 'slots' | 'props'>): {
  slots: { name: string; at: Path; item: Loose }[];
  props: { name: string; type: string; at: Path; item: Loose }[];
} {
  const list = (items: unknown, at: Path) =>
    (Array.isArray(items) ? items : []).flatMap((item: unknown, i) => {
      const name = nameOf(item);
      return name === null ? [] : [{ name, at: [...at, i], item: item as Loose }];
    });
  const doc = (t.document ?? {}) as Loose;
  const slots = [...list(t.slots, ['slots']), ...list(doc.slots, ['document', 'slots'])];
  const props = [...list(t.props, ['props']), ...list(doc.props, ['document', 'props'])].map((p) => ({
    ...p,
    type: typeof p.item.type === 'string' ? p.item.type : 'string',
  }));
  return { slots, props };
}

/**
 * The first reference problem of a template, or null: subject and preview placeholders name a
 * slot or a prop; block fields and html name a prop; an href or src that is one placeholder names
 * a `url` prop; no name is declared twice, as prop and slot included.
 */
export function checkTemplateReferences(t: TemplateReferences): ReferenceProblem | null {
  const { slots, props } = declarations(t);
  const propTypes = new Map<string, string>();
  const slotNames = new Set<string>();
  for (const p of props) {
    if (propTypes.has(p.name)) return { path: [...p.at, 'name'], message: `Two props are named \`${p.name}\`.` };
    propTypes.set(p.name, p.type);
  }
  for (const s of slots) {
    if (slotNames.has(s.name)) return { path: [...s.at, 'name'], message: `Two slots are named \`${s.name}\`.` };
    if (propTypes.has(s.name))
      return { path: [...s.at, 'name'], message: `\`${s.name}\` names both a prop and a slot.` };
    slotNames.add(s.name);
  }

  const undeclared = (value: string, allowSlots: boolean): string | null =>
    placeholders(value).find((n) => !propTypes.has(n) && !(allowSlots && slotNames.has(n))) ?? null;

  const inSubject = undeclared(t.subject ?? '', true);
  if (inSubject !== null)
    return { path: ['subject'], message: `The subject uses \`{{${inSubject}}}\`, which is neither a slot nor a prop.` };

  const doc = (t.document ?? null) as Loose | null;
  if (doc && typeof doc.preview === 'string') {
    const inPreview = undeclared(doc.preview, true);
    if (inPreview !== null) {
      return {
        path: ['document', 'preview'],
        message: `The preview uses \`{{${inPreview}}}\`, which is neither a slot nor a prop.`,
      };
    }
  }

  if (doc && Array.isArray(doc.body)) {
    const stack: { node: unknown; path: Path }[] = [];
    for (let i = doc.body.length - 1; i >= 0; i--) stack.push({ node: doc.body[i], path: ['document', 'body', i] });
    while (stack.length > 0) {
      const { node, path } = stack.pop()!;
      if (node === null || typeof node !== 'object') continue;
      const block = node as Loose;
      for (const field of PLACEHOLDER_FIELDS) {
        const value = block[field];
        if (typeof value !== 'string') continue;
        const name = undeclared(value, false);
        if (name !== null)
          return { path: [...path, field], message: `\`{{${name}}}\` is not a prop of this template.` };
        if (field === 'href' || field === 'src') {
          const whole = wholePlaceholder(value);
          if (whole !== null && propTypes.get(whole) !== 'url') {
            return {
              path: [...path, field],
              message: `\`{{${whole}}}\` stands for an address, so it must be a prop of type url.`,
            };
          }
        }
      }
      if (Array.isArray(block.children)) {
        for (let i = block.children.length - 1; i >= 0; i--)
          stack.push({ node: block.children[i], path: [...path, 'children', i] });
      }
    }
  }

  if (typeof t.html === 'string') {
    const name = undeclared(t.html, false);
    if (name !== null) return { path: ['html'], message: `\`{{${name}}}\` is not a prop of this template.` };
  }
  return null;
}
