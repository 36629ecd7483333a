import t from 'tap';
import { z } from 'zod';
import {
  BLOCKS_MAX,
  CODE_LANGUAGES,
  DEPTH_MAX,
  blockSchema,
  checkTemplateReferences,
  documentSchema,
  fontSchema,
  placeholders,
  propsSchema,
  slotsSchema,
  styleSchema,
  subjectSchema,
  type TemplateReferences,
} from '../../domain/templates/document.ts';

type Issue = { path: PropertyKey[]; code: string; message: string; keys?: string[] };

/** When the input is parsed, then the first issue (or null when it is accepted). */
function firstIssue(schema: z.ZodType, input: unknown): Issue | null {
  const r = schema.safeParse(input);
  return r.success ? null : (r.error.issues[0] as Issue);
}
const text = (s = 'x') => ({ kind: 'Text', text: s });
const doc = (body: unknown[], extra: Record<string, unknown> = {}) => ({ body, ...extra });
/** A chain of `levels` blocks, each the only child of the one before; the innermost is a Text. */
function nested(levels: number): unknown {
  let node: unknown = text('deepest');
  for (let i = 1; i < levels; i++) node = { kind: 'Section', children: [node] };
  return node;
}
const pathOfDepth = (levels: number) => [
  'body',
  0,
  ...Array.from({ length: levels - 1 }, () => ['children', 0]).flat(),
];

t.test('a minimal document is accepted and gets its defaults', async (t) => {
  const parsed = documentSchema.parse(
    doc([
      { kind: 'Heading', text: 'Hi' },
      { kind: 'Img', src: 'https://example.com/a.png' },
      { kind: 'CodeBlock', code: 'x' },
      { kind: 'Container', children: [] },
    ]),
  );
  t.same(parsed, {
    body: [
      { kind: 'Heading', text: 'Hi', level: 2 },
      { kind: 'Img', src: 'https://example.com/a.png', alt: '' },
      { kind: 'CodeBlock', code: 'x', language: 'plaintext' },
      { kind: 'Container', children: [] },
    ],
    tailwind: false,
  });
  t.same(firstIssue(documentSchema, {}), {
    expected: 'array',
    code: 'invalid_type',
    path: ['body'],
    message: 'Invalid input: expected array, received undefined',
  });
});

t.test('every block kind with every field is accepted', async (t) => {
  const all = [
    {
      kind: 'Section',
      style: { padding: 8 },
      children: [{ kind: 'Row', children: [{ kind: 'Column', children: [text()] }] }],
    },
    { kind: 'Container', children: [] },
    { kind: 'Text', text: 'a' },
    { kind: 'Heading', text: 'h', level: 6 },
    { kind: 'Button', text: 'b', href: 'https://example.com' },
    { kind: 'Link', text: 'l', href: 'mailto:a@example.com' },
    { kind: 'Img', src: 'http://example.com/a.png', alt: 'a', width: 2000, height: 1 },
    { kind: 'Hr' },
    { kind: 'Markdown', markdown: '# x' },
    { kind: 'CodeBlock', code: 'x', language: 'typescript' },
    { kind: 'CodeInline', code: 'x' },
  ];
  t.equal(firstIssue(documentSchema, doc(all)), null);
  for (const language of CODE_LANGUAGES)
    t.equal(firstIssue(blockSchema, { kind: 'CodeBlock', code: '', language }), null, language);
});

t.test('block count: 500 blocks in the tree pass, the 501st in depth-first order fails at its path', async (t) => {
  t.equal(firstIssue(documentSchema, doc(Array.from({ length: BLOCKS_MAX }, () => text()))), null);
  const flat = firstIssue(documentSchema, doc(Array.from({ length: BLOCKS_MAX + 1 }, () => text())));
  t.same(flat?.path, ['body', 500]);
  t.match(flat?.message, /at most 500 blocks/);

  // A section (1) with 499 children (500): the next body block is the 501st, not the section's last child.
  const section = { kind: 'Section', children: Array.from({ length: 499 }, () => text()) };
  t.equal(firstIssue(documentSchema, doc([section])), null);
  t.same(firstIssue(documentSchema, doc([section, text(), text()]))?.path, ['body', 1]);
  const inner = {
    kind: 'Section',
    children: [{ kind: 'Column', children: Array.from({ length: 499 }, () => text()) }],
  };
  t.same(firstIssue(documentSchema, doc([inner]))?.path, ['body', 0, 'children', 0, 'children', 498]);
});

t.test('depth: body is level 1; 8 levels pass, a block at level 9 fails at its path', async (t) => {
  t.equal(firstIssue(documentSchema, doc([nested(DEPTH_MAX)])), null);
  const nine = firstIssue(documentSchema, doc([nested(DEPTH_MAX + 1)]));
  t.same(nine?.path, pathOfDepth(9));
  t.match(nine?.message, /8 levels/);
});

t.test('a hostile nesting is refused without exhausting the stack', async (t) => {
  const issue = firstIssue(documentSchema, doc([nested(20_000)]));
  t.same(issue?.path, pathOfDepth(9));
});

t.test('preview, fonts, text, href, dimensions, heading level: at the limit and one past', async (t) => {
  t.equal(firstIssue(documentSchema, doc([], { preview: 'p'.repeat(256) })), null);
  t.same(firstIssue(documentSchema, doc([], { preview: 'p'.repeat(257) }))?.path, ['preview']);

  const font = { family: 'Inter' };
  t.equal(firstIssue(documentSchema, doc([], { fonts: Array.from({ length: 8 }, () => font) })), null);
  t.same(firstIssue(documentSchema, doc([], { fonts: Array.from({ length: 9 }, () => font) }))?.path, ['fonts']);

  t.equal(firstIssue(blockSchema, text('a'.repeat(10_000))), null);
  t.same(firstIssue(blockSchema, text('a'.repeat(10_001)))?.path, ['text']);

  const href = (n: number) => `https://example.com/${'a'.repeat(n - 'https://example.com/'.length)}`;
  t.equal(firstIssue(blockSchema, { kind: 'Link', text: 'l', href: href(2048) }), null);
  t.same(firstIssue(blockSchema, { kind: 'Link', text: 'l', href: href(2049) })?.path, ['href']);

  const img = (width: number) => ({ kind: 'Img', src: 'https://example.com/a.png', width });
  t.equal(firstIssue(blockSchema, img(2000)), null);
  t.same(firstIssue(blockSchema, img(2001))?.path, ['width']);
  t.same(firstIssue(blockSchema, img(0))?.path, ['width']);
  t.same(firstIssue(blockSchema, img(1.5))?.path, ['width']);

  t.same(firstIssue(blockSchema, { kind: 'Heading', text: 'h', level: 7 })?.path, ['level']);
  t.same(firstIssue(blockSchema, { kind: 'Heading', text: 'h', level: 0 })?.path, ['level']);
});

t.test('style: a property mail clients do not honour fails at its own path, in either spelling', async (t) => {
  const body = [
    text(),
    text(),
    { kind: 'Section', children: [{ kind: 'Hr', style: { color: 'red', position: 'absolute' } }] },
  ];
  const issue = firstIssue(documentSchema, doc(body));
  t.same(issue?.path, ['body', 2, 'children', 0, 'style', 'position']);
  t.equal(issue?.message, 'Not a style property mail clients honour.');

  t.same(firstIssue(documentSchema, doc([{ kind: 'Text', text: 'x', style: { zIndex: 2 } }]))?.path, [
    'body',
    0,
    'style',
    'zIndex',
  ]);
  t.same(firstIssue(documentSchema, doc([{ kind: 'Text', text: 'x', style: { 'z-index': 2 } }]))?.path, [
    'body',
    0,
    'style',
    'z-index',
  ]);
  t.same(firstIssue(documentSchema, doc([], { style: { float: 'left' } }))?.path, ['style', 'float']);
  // Neither mixed spellings nor other case.
  t.same(firstIssue(styleSchema, { 'background-Color': 'red' })?.path, ['background-Color']);
  t.same(firstIssue(styleSchema, { BackgroundColor: 'red' })?.path, ['BackgroundColor']);
});

t.test('style: both spellings are accepted, once each property', async (t) => {
  t.equal(
    firstIssue(styleSchema, {
      backgroundColor: '#fff',
      'font-size': 14,
      borderTopLeftRadius: '4px',
      'max-width': '600px',
      opacity: 0.5,
    }),
    null,
  );
  t.equal(firstIssue(styleSchema, { 'background-color': '#fff', fontSize: '14px', 'border-top-left-radius': 4 }), null);
  const twice = firstIssue(styleSchema, { backgroundColor: '#fff', 'background-color': '#000' });
  t.same(twice?.path, ['background-color']);
  t.match(twice?.message, /given twice/);
});

t.test('style: values are short strings without escapes or active content, or finite numbers', async (t) => {
  const ok = [
    '12px',
    'Arial, "Times New Roman", serif',
    'url(https://example.com/bg.png)',
    "url( 'https://example.com/a.png' ) no-repeat",
    'v'.repeat(200),
  ];
  for (const v of ok) t.equal(firstIssue(styleSchema, { background: v }), null, v);
  const bad = [
    'v'.repeat(201),
    'red; position: absolute',
    'red}',
    '<b>',
    'expression(alert(1))',
    'EXPRESSION(alert(1))',
    'url(javascript:alert(1))',
    'javascript:alert(1)',
    'url(http://example.com/a.png)',
    'url(data:image/png;base64,xx)',
    'url(//example.com/a.png)',
    '\\75rl(x)',
    'red /* x */',
  ];
  for (const v of bad) t.same(firstIssue(styleSchema, { background: v })?.path, ['background'], v);
  t.same(firstIssue(styleSchema, { width: Number.POSITIVE_INFINITY })?.path, ['width']);
  t.same(firstIssue(styleSchema, { width: true })?.path, ['width']);
});

t.test('blocks are strict: an unknown key or kind is refused', async (t) => {
  const unknownKey = firstIssue(documentSchema, doc([text(), { kind: 'Text', text: 'x', colour: 'red' }]));
  t.equal(unknownKey?.code, 'unrecognized_keys');
  t.same(unknownKey?.path, ['body', 1]);
  t.same(unknownKey?.keys, ['colour']);

  const unknownKind = firstIssue(documentSchema, doc([{ kind: 'Video', src: 'https://example.com/v.mp4' }]));
  t.equal(unknownKind?.code, 'invalid_union');
  t.same(unknownKind?.path, ['body', 0, 'kind']);

  t.same(firstIssue(documentSchema, doc([{ kind: 'Section' }]))?.path, ['body', 0, 'children']);
  t.same(firstIssue(documentSchema, doc([{ kind: 'Hr', text: 'no' }]))?.path, ['body', 0]);
  t.same(firstIssue(documentSchema, doc([], { theme: 'dark' }))?.path, []);
});

t.test('href and src: http(s), mailto for links, or one placeholder', async (t) => {
  const link = (href: string) => firstIssue(blockSchema, { kind: 'Button', text: 'b', href });
  for (const ok of [
    'https://example.com',
    'HTTP://example.com/x?a=1&b=2',
    'mailto:a@example.com',
    '{{cta}}',
    '{{ cta }}',
    'https://example.com/{{id}}',
  ]) {
    t.equal(link(ok), null, ok);
  }
  for (const bad of [
    'javascript:alert(1)',
    '/relative',
    '//example.com',
    'https://',
    'ftp://example.com',
    'https://exa mple.com',
    'https://a"b',
    '{{a}}{{b}}',
    '',
  ]) {
    t.same(link(bad)?.path, ['href'], bad);
  }
  const img = (src: string) => firstIssue(blockSchema, { kind: 'Img', src });
  t.equal(img('{{photo}}'), null);
  t.same(img('mailto:a@example.com')?.path, ['src']);
  t.same(img('data:image/png;base64,AAAA')?.path, ['src']);
});

t.test('props: defaults, names, types, limits, unique names', async (t) => {
  t.same(propsSchema.parse([{ name: 'first_name' }]), [
    { name: 'first_name', type: 'string', required: false, default: null, description: null },
  ]);
  t.equal(
    firstIssue(
      propsSchema,
      Array.from({ length: 50 }, (_, i) => ({ name: `p${i}` })),
    ),
    null,
  );
  t.same(
    firstIssue(
      propsSchema,
      Array.from({ length: 51 }, (_, i) => ({ name: `p${i}` })),
    )?.path,
    [],
  );
  t.same(firstIssue(propsSchema, [{ name: 'a' }, { name: 'b' }, { name: 'a' }])?.path, [2, 'name']);
  for (const bad of ['1st', 'first-name', '', 'a'.repeat(65)])
    t.same(firstIssue(propsSchema, [{ name: bad }])?.path, [0, 'name'], bad);
  t.equal(firstIssue(propsSchema, [{ name: `_${'a'.repeat(63)}` }]), null);
  t.same(firstIssue(propsSchema, [{ name: 'n', type: 'date' }])?.path, [0, 'type']);
  t.same(firstIssue(propsSchema, [{ name: 'n', type: 'number', default: '3' }])?.path, [0, 'default']);
  t.same(firstIssue(propsSchema, [{ name: 'n', type: 'url', default: 'javascript:x' }])?.path, [0, 'default']);
  t.equal(firstIssue(propsSchema, [{ name: 'n', type: 'url', default: 'https://example.com' }]), null);
  t.same(firstIssue(propsSchema, [{ name: 'n', description: 'd'.repeat(201) }])?.path, [0, 'description']);
  t.same(firstIssue(propsSchema, [{ name: 'n', extra: 1 }])?.code, 'unrecognized_keys');
});

t.test('slots: defaults, limits, unique names; a prop and a slot may not share a name', async (t) => {
  t.same(slotsSchema.parse([{ name: 'company' }]), [{ name: 'company', description: null, default: null }]);
  t.equal(
    firstIssue(
      slotsSchema,
      Array.from({ length: 20 }, (_, i) => ({ name: `s${i}` })),
    ),
    null,
  );
  t.same(
    firstIssue(
      slotsSchema,
      Array.from({ length: 21 }, (_, i) => ({ name: `s${i}` })),
    )?.path,
    [],
  );
  t.same(firstIssue(slotsSchema, [{ name: 's' }, { name: 's' }])?.path, [1, 'name']);
  t.same(firstIssue(slotsSchema, [{ name: 's', default: 'd'.repeat(999) }])?.path, [0, 'default']);
  const shared = firstIssue(documentSchema, doc([], { props: [{ name: 'x' }], slots: [{ name: 'y' }, { name: 'x' }] }));
  t.same(shared?.path, ['slots', 1, 'name']);
  t.same(firstIssue(documentSchema, doc([], { props: [{ name: 'x' }, { name: 'x' }] }))?.path, ['props', 1, 'name']);
});

t.test('fonts: family, https url, weight, style, fallback', async (t) => {
  t.same(fontSchema.parse({ family: 'Open Sans' }), {
    family: 'Open Sans',
    url: null,
    weight: 400,
    style: 'normal',
    fallback: 'sans-serif',
  });
  t.equal(
    firstIssue(fontSchema, {
      family: 'Inter-2',
      url: 'https://fonts.example.com/inter.woff2',
      weight: 900,
      style: 'italic',
      fallback: 'Courier New',
    }),
    null,
  );
  t.same(firstIssue(fontSchema, { family: "Inter'; x" })?.path, ['family']);
  t.same(firstIssue(fontSchema, { family: 'a'.repeat(65) })?.path, ['family']);
  t.same(firstIssue(fontSchema, { family: 'Inter', url: 'http://fonts.example.com/a.woff2' })?.path, ['url']);
  t.same(firstIssue(fontSchema, { family: 'Inter', url: 'https://fonts.example.com/a.woff2) format(x' })?.path, [
    'url',
  ]);
  t.same(firstIssue(fontSchema, { family: 'Inter', weight: 450 })?.path, ['weight']);
  t.same(firstIssue(fontSchema, { family: 'Inter', weight: 1000 })?.path, ['weight']);
  t.same(firstIssue(fontSchema, { family: 'Inter', fallback: 'Comic Sans MS' })?.path, ['fallback']);
});

t.test('subject: 998 characters, no line breaks', async (t) => {
  t.equal(firstIssue(subjectSchema, 's'.repeat(998)), null);
  t.same(firstIssue(subjectSchema, 's'.repeat(999))?.path, []);
  t.ok(firstIssue(subjectSchema, 'a\r\nBcc: x@example.com'));
  t.ok(firstIssue(subjectSchema, 'a\nb'));
});

t.test('placeholders: names in braces, whitespace allowed, each once', async (t) => {
  t.same(placeholders('Hi {{first_name}}, {{ first_name }} {{\tlast }} {{bad-name}} {{}} {{ 9x }} {single}'), [
    'first_name',
    'last',
  ]);
  t.same(placeholders('none'), []);
});

t.test('the schemas are representable as JSON Schema', async (t) => {
  for (const io of ['input', 'output'] as const) {
    const json = z.toJSONSchema(documentSchema, { io, unrepresentable: 'any' }) as {
      properties: Record<string, unknown>;
      $defs: Record<string, unknown>;
    };
    t.ok(json.properties.body, io);
    t.ok(json.$defs.TemplateBlock, io);
  }
  t.doesNotThrow(() =>
    z.toJSONSchema(z.object({ subject: subjectSchema, props: propsSchema, slots: slotsSchema }), {
      io: 'input',
      unrepresentable: 'any',
    }),
  );
});

// ---------------------------------------------------------------------------------------------
// References

const refs = (overrides: Partial<TemplateReferences> = {}): TemplateReferences => ({
  subject: 'Hello {{company}} and {{first_name}}',
  document: {
    preview: 'From {{company}}',
    body: [
      text('Hi {{ first_name }}'),
      { kind: 'Section', children: [{ kind: 'Img', src: '{{photo}}', alt: '{{first_name}}' }] },
      { kind: 'Markdown', markdown: '**{{first_name}}**' },
      { kind: 'Button', text: 'Go', href: '{{cta}}' },
    ],
  },
  html: null,
  slots: [{ name: 'company' }],
  props: [{ name: 'first_name' }, { name: 'cta', type: 'url' }, { name: 'photo', type: 'url' }],
  ...overrides,
});
const body = (r: TemplateReferences) => (r.document as { body: Record<string, unknown>[] }).body;

t.test('references: a template whose placeholders all name declarations passes', async (t) => {
  t.equal(checkTemplateReferences(refs()), null);
  t.equal(checkTemplateReferences(refs({ document: null, html: '<p>{{first_name}}</p>' })), null);
});

t.test('references: subject and preview name slots or props', async (t) => {
  t.same(checkTemplateReferences(refs({ subject: 'Hi {{nobody}}' }))?.path, ['subject']);
  const r = refs();
  (r.document as Record<string, unknown>).preview = '{{nobody}}';
  t.same(checkTemplateReferences(r)?.path, ['document', 'preview']);
});

t.test('references: block fields and html name props, not slots', async (t) => {
  const r = refs();
  body(r)[3]!.text = 'Go to {{company}}';
  const found = checkTemplateReferences(r);
  t.same(found?.path, ['document', 'body', 3, 'text']);
  t.match(found?.message, /company/);

  const nested = refs();
  (body(nested)[1]!.children as Record<string, unknown>[])[0]!.alt = '{{missing}}';
  t.same(checkTemplateReferences(nested)?.path, ['document', 'body', 1, 'children', 0, 'alt']);

  const code = refs();
  body(code).push({ kind: 'CodeBlock', code: 'x = {{ y }}' });
  t.same(checkTemplateReferences(code)?.path, ['document', 'body', 4, 'code']);

  t.same(checkTemplateReferences(refs({ document: null, html: '<p>{{company}}</p>' }))?.path, ['html']);
});

t.test('references: an href or src that is one placeholder names a url prop', async (t) => {
  const r = refs();
  body(r)[3]!.href = '{{first_name}}';
  const found = checkTemplateReferences(r);
  t.same(found?.path, ['document', 'body', 3, 'href']);
  t.match(found?.message, /type url/);

  const img = refs();
  (body(img)[1]!.children as Record<string, unknown>[])[0]!.src = '{{ first_name }}';
  t.same(checkTemplateReferences(img)?.path, ['document', 'body', 1, 'children', 0, 'src']);

  const inside = refs();
  body(inside)[3]!.href = 'https://example.com/u/{{first_name}}';
  t.equal(checkTemplateReferences(inside), null, 'a placeholder inside an address may be any prop');
});

t.test('references: no name twice, and not as both prop and slot', async (t) => {
  t.same(checkTemplateReferences(refs({ slots: [{ name: 'company' }, { name: 'cta' }] }))?.path, ['slots', 1, 'name']);
  t.same(checkTemplateReferences(refs({ props: [{ name: 'first_name' }, { name: 'first_name' }] }))?.path, [
    'props',
    1,
    'name',
  ]);
  const r = refs();
  (r.document as Record<string, unknown>).props = [{ name: 'cta', type: 'url' }];
  t.same(checkTemplateReferences(r)?.path, ['document', 'props', 0, 'name']);
});

t.test("references: a document's own props and slots count as declared", async (t) => {
  const r = refs({ props: [], slots: [] });
  Object.assign(r.document as Record<string, unknown>, {
    slots: [{ name: 'company' }],
    props: [{ name: 'first_name' }, { name: 'cta', type: 'url' }, { name: 'photo', type: 'url' }],
  });
  t.equal(checkTemplateReferences(r), null);
});
