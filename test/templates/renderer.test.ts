import t from 'tap';
import { DomUtils, parseDocument } from 'htmlparser2';
import { CODE_LANGUAGES, documentSchema } from '../../domain/templates/document.ts';
import type { RenderableContent } from '../../infra/templates/port.ts';
import { compile, createTemplateRenderer, fill } from '../../infra/templates/renderer.ts';
import { sanitiseHtml } from '../../infra/templates/sanitise.ts';

const { findAll, findOne, textContent, getAttributeValue, getElementsByTagName } = DomUtils;
type AnyNode = ReturnType<typeof parseDocument>['children'][number];
type Element = ReturnType<typeof getElementsByTagName>[number];

/** A document with one block of every kind, using props in text, attributes, markdown and code. */
const EVERY_KIND = {
  preview: 'News for {{first_name}} from {{company}}',
  fonts: [{ family: 'Inter', url: 'https://fonts.example.com/inter.woff2', weight: 400 }],
  style: { backgroundColor: '#fafafa', 'font-size': '15px' },
  body: [
    { kind: 'Heading', level: 3, text: 'Hello {{first_name}}', style: { textAlign: 'center', color: '#123456' } },
    { kind: 'Text', text: 'Line one for {{ first_name }}\nline two', style: { 'line-height': '20px' } },
    {
      kind: 'Button',
      text: 'Start {{first_name}}',
      href: '{{cta}}',
      style: { backgroundColor: '#000', color: '#fff', padding: 12 },
    },
    { kind: 'Link', text: 'Write to us', href: 'mailto:help@example.com' },
    { kind: 'Img', src: '{{avatar}}', alt: 'Photo of {{first_name}}', width: 64, height: 48 },
    { kind: 'Hr', style: { borderColor: '#cccccc' } },
    {
      kind: 'Markdown',
      markdown: '# Title {{first_name}}\n\nDear **{{first_name}}** and _{{last_name}}_.\n\n- one\n- [two]({{cta}})',
    },
    { kind: 'CodeBlock', code: 'const who = "{{first_name}}";\nlet n = {{ count }};', language: 'javascript' },
    { kind: 'CodeInline', code: 'npm i {{first_name}}' },
    {
      kind: 'Section',
      style: { padding: '8px' },
      children: [
        {
          kind: 'Row',
          children: [
            { kind: 'Column', style: { width: '50%' }, children: [{ kind: 'Text', text: 'Left {{count}}' }] },
            { kind: 'Column', children: [{ kind: 'Text', text: 'Right' }] },
          ],
        },
      ],
    },
    { kind: 'Container', style: { maxWidth: '300px' }, children: [{ kind: 'Text', text: 'Inner' }] },
  ],
};
const SUBJECT = 'Hi {{first_name}} from {{company}}';
const blocks = (document: unknown, subject = SUBJECT): RenderableContent => ({
  engine: 'blocks',
  subject,
  document: documentSchema.parse(document) as Record<string, unknown>,
  html: null,
});
const VALUES = {
  first_name: 'Ada',
  last_name: 'Lovelace',
  count: '42',
  cta: 'https://example.com/start?a=1&b=2',
  avatar: 'https://cdn.example.com/ada.png',
  company: 'Acme',
};

const elements = (root: AnyNode[] | AnyNode, tag: string) => getElementsByTagName(tag, root, true);
const style = (el: Element | null | undefined) => (el ? (getAttributeValue(el, 'style') ?? '') : '');
const textOf = (el: AnyNode | AnyNode[]) => textContent(el).replace(/\u00A0\u200D\u200B/g, ' ');

t.test('every block kind renders to the elements mail clients expect', async (t) => {
  const renderer = createTemplateRenderer({ cacheSize: 10 });
  const out = await renderer.render('v1', blocks(EVERY_KIND), VALUES);
  const dom = parseDocument(out.html);
  const html = elements(dom, 'html')[0]!;
  const head = elements(html, 'head')[0]!;
  const body = elements(html, 'body')[0]!;

  t.test('head: the fonts', async (t) => {
    const css = elements(head, 'style')
      .map((s) => textContent(s))
      .join('\n');
    t.match(css, /@font-face/);
    t.match(css, /font-family: 'Inter'/);
    t.match(css, /url\(https:\/\/fonts\.example\.com\/inter\.woff2\) format\('woff2'\)/);
  });

  t.test('body: document style inlined, preview first, blocks in a default container', async (t) => {
    t.match(style(body), /background-color:#fafafa/);
    // react-email's Body puts the whole style on the cell that wraps the content.
    const wrapper = findOne((e) => e.name === 'td', body.children, true)!;
    t.match(style(wrapper), /font-size:15px/);
    const preview = findOne((e) => getAttributeValue(e, 'data-skip-in-text') === 'true', body.children, true)!;
    t.match(textContent(preview), /^News for Ada from Acme/);
    const container = findOne((e) => e.name === 'table' && /max-width:37\.5em/.test(style(e)), body.children, true);
    t.ok(container, 'the default Container');
    t.ok(
      findOne((e) => e.name === 'h3', container!.children, true),
      'blocks sit inside it',
    );
  });

  t.test('Heading level 3 is an h3 with its text and style', async (t) => {
    const h3 = elements(body, 'h3');
    t.equal(h3.length, 1);
    t.equal(textContent(h3[0]!), 'Hello Ada');
    t.match(style(h3[0]), /text-align:center/);
    t.match(style(h3[0]), /color:#123456/);
  });

  t.test('Text is a p, its line breaks are br', async (t) => {
    const p = elements(body, 'p').find((e) => textContent(e).startsWith('Line one'))!;
    t.equal(textContent(p), 'Line one for Adaline two');
    t.equal(elements(p, 'br').length, 1);
    t.match(style(p), /line-height:20px/);
  });

  t.test('Button is an a with the filled href; Link is an a', async (t) => {
    const links = elements(body, 'a');
    const button = links.find((a) => textContent(a).includes('Start Ada'))!;
    t.equal(getAttributeValue(button, 'href'), VALUES.cta, 'entity-decoded, the href is the value');
    t.match(style(button), /background-color:#000/);
    t.match(style(button), /padding:12px/);
    const link = links.find((a) => textContent(a) === 'Write to us')!;
    t.equal(getAttributeValue(link, 'href'), 'mailto:help@example.com');
  });

  t.test('Img has src, alt, width and height', async (t) => {
    const img = elements(body, 'img')[0]!;
    t.equal(getAttributeValue(img, 'src'), VALUES.avatar);
    t.equal(getAttributeValue(img, 'alt'), 'Photo of Ada');
    t.equal(getAttributeValue(img, 'width'), '64');
    t.equal(getAttributeValue(img, 'height'), '48');
  });

  t.test('Hr is an hr', async (t) => {
    const hr = elements(body, 'hr');
    t.equal(hr.length, 1);
    t.match(style(hr[0]), /border-color:#cccccc/);
  });

  t.test('Markdown becomes headings, strong, em, lists and links', async (t) => {
    const md = findOne((e) => e.name === 'h1', body.children, true)!.parent as Element;
    t.equal(textContent(elements(md, 'h1')[0]!), 'Title Ada');
    t.equal(textContent(elements(md, 'strong')[0]!), 'Ada');
    t.equal(
      textContent(elements(md, 'em')[0]!),
      'Lovelace',
      'an underscore in a placeholder name does not start emphasis',
    );
    t.same(
      elements(md, 'li').map((li) => textContent(li)),
      ['one', 'two'],
    );
    t.equal(getAttributeValue(elements(md, 'a')[0]!, 'href'), VALUES.cta);
  });

  t.test('CodeBlock is a pre with highlighted code; CodeInline is a code', async (t) => {
    const pre = elements(body, 'pre');
    t.equal(pre.length, 1);
    t.equal(textOf(pre[0]!), 'const who = "Ada";let n = 42;');
    t.ok(
      elements(pre[0]!, 'span').some((s) => /color:/.test(style(s))),
      'tokens are coloured (dracula)',
    );
    const code = elements(body, 'code').filter((c) => c.parent?.type !== 'tag' || (c.parent as Element).name !== 'pre');
    t.ok(code.some((c) => textContent(c) === 'npm i Ada'));
  });

  t.test('Section, Row and Column are tables, rows and cells', async (t) => {
    const cells = findAll(
      (e) => e.name === 'td' && getAttributeValue(e, 'data-id') === '__react-email-column',
      body.children,
    );
    t.equal(cells.length, 2);
    t.equal(textContent(cells[0]!), 'Left 42');
    t.match(style(cells[0]), /width:50%/);
    const row = cells[0]!.parent as Element;
    t.equal(row.name, 'tr');
    t.equal(cells[1]!.parent, row, 'both columns in one row');
    const section = findAll((e) => e.name === 'table' && /padding:8px/.test(style(e)), body.children);
    t.equal(section.length, 1, 'the Section is a table carrying its style');
    t.ok(
      findOne((e) => e === row, section[0]!.children, true),
      'the row is inside the section',
    );
  });

  t.test('Container is a centred table carrying its style', async (t) => {
    const inner = findOne((e) => e.name === 'table' && /max-width:300px/.test(style(e)), body.children, true)!;
    t.equal(textContent(inner), 'Inner');
  });

  t.test('subject and plain text are filled', async (t) => {
    t.equal(out.subject, 'Hi Ada from Acme');
    t.match(out.text, /Hello Ada/, 'headings keep their case');
    t.match(out.text, /Line one for Ada\nline two/);
    t.match(out.text, new RegExp(`Start Ada ${VALUES.cta.replace(/[?.]/g, '\\$&')}`));
    t.match(out.text, /const who = "Ada";/);
    t.match(out.text, /Dear Ada and Lovelace/);
    t.equal(out.text.split('npm i Ada').length - 1, 1, 'CodeInline once');
    t.notMatch(out.text, /News for/, 'the preview is not part of the text');
    t.notMatch(out.text, /[\uE000-\uF8FF]|\{\{/, 'no placeholder left');
  });
});

t.test("placeholders pass through React's escaping as literal text and attributes", async (t) => {
  const compiled = await compile(blocks(EVERY_KIND));
  t.match(compiled.html, /href="\{\{cta\}\}"/, 'the Button href');
  t.match(compiled.html, /src="\{\{avatar\}\}"/);
  t.match(compiled.html, /<h3[^>]*>Hello \{\{first_name\}\}<\/h3>/);
  t.match(compiled.text, /Hello \{\{first_name\}\}/);
  t.equal(compiled.subject, SUBJECT);
  t.equal(compiled.preview, EVERY_KIND.preview);
  t.notMatch(compiled.html, /[\uE000-\uF8FF]/, 'no stand-in left in the readable form');
  // And straight from React, without stand-ins: braces are not escaped, in text or attributes.
  const plain = await compile(
    blocks({ body: [{ kind: 'Button', text: '{{label}}', href: 'https://example.com/{{cta}}' }] }, 'x'),
  );
  t.match(plain.html, /href="https:\/\/example\.com\/\{\{cta\}\}"/);
});

t.test('values are escaped in the html: markup in a prop never becomes an element', async (t) => {
  const hostile = {
    ...VALUES,
    first_name: '<script>alert(1)</script><img src=x onerror=alert(1)>',
    last_name: `"quoted" & 'single'`,
  };
  const out = fill(await compile(blocks(EVERY_KIND)), hostile);
  const dom = parseDocument(out.html);
  t.equal(elements(dom, 'script').length, 0);
  t.equal(elements(dom, 'img').length, 1, 'only the Img block');
  t.equal(findAll((e) => Object.keys(e.attribs).some((a) => a.startsWith('on')), dom.children).length, 0);
  t.equal(textContent(elements(dom, 'h3')[0]!), `Hello ${hostile.first_name}`);
  t.equal(getAttributeValue(elements(dom, 'img')[0]!, 'alt'), `Photo of ${hostile.first_name}`);
  t.equal(textContent(elements(dom, 'em')[0]!), hostile.last_name);
  t.match(out.text, /Hello <script>alert\(1\)<\/script>/, 'the text part takes values raw');
});

t.test('the subject takes values raw, line breaks turned to spaces', async (t) => {
  const out = fill(await compile(blocks(EVERY_KIND)), {
    ...VALUES,
    first_name: 'Ada\r\nBcc: x@example.com',
    company: '<b>',
  });
  t.equal(out.subject, 'Hi Ada Bcc: x@example.com from <b>');
});

t.test('a value that starts an address and is not http(s) or mailto is left out', async (t) => {
  const compiled = await compile(
    blocks({ body: [{ kind: 'Markdown', markdown: '[a]({{target}}) [b](https://example.com/?q={{target}})' }] }, 'x'),
  );
  const hrefs = (v: string) =>
    elements(parseDocument(fill(compiled, { target: v }).html), 'a').map((a) => getAttributeValue(a, 'href'));
  t.same(hrefs('javascript:alert(1)'), ['', 'https://example.com/?q=javascript:alert(1)']);
  t.same(hrefs('https://ok.example.com'), ['https://ok.example.com', 'https://example.com/?q=https://ok.example.com']);
});

t.test("Markdown's raw html, script links and attribute tricks are sanitised away", async (t) => {
  const md = [
    '<script>alert(1)</script>',
    'text <iframe src="https://x.example.com"></iframe>',
    '[x](javascript:alert(1)) [y](<https://a.example.com" onclick="alert(1)>)',
    'a <b onmouseover="x">b</b> ![i](http://insecure.example.com/i.png)',
  ].join('\n\n');
  const out = fill(await compile(blocks({ body: [{ kind: 'Markdown', markdown: md }] }, 'x')), {});
  const dom = parseDocument(out.html);
  t.equal(elements(dom, 'script').length, 0);
  t.equal(elements(dom, 'iframe').length, 0);
  t.equal(findAll((e) => Object.keys(e.attribs).some((a) => a.startsWith('on')), dom.children).length, 0);
  t.notOk(
    findAll((e) => e.name === 'a', dom.children).some((a) => /^javascript:/i.test(getAttributeValue(a, 'href') ?? '')),
  );
  t.notOk(elements(dom, 'img').some((i) => /^http:/.test(getAttributeValue(i, 'src') ?? '')));
  t.equal(textContent(elements(dom, 'b')[0]!), 'b');
});

t.test('rows hold columns and columns sit in rows, whatever the document nests', async (t) => {
  const out = fill(
    await compile(
      blocks(
        {
          body: [
            { kind: 'Row', children: [{ kind: 'Text', text: 'loose' }] },
            { kind: 'Column', children: [{ kind: 'Text', text: 'alone' }] },
          ],
        },
        'x',
      ),
    ),
    {},
  );
  const cells = elements(parseDocument(out.html), 'td').filter(
    (td) => getAttributeValue(td, 'data-id') === '__react-email-column',
  );
  t.same(
    cells.map((c) => [textContent(c), (c.parent as Element).name]),
    [
      ['loose', 'tr'],
      ['alone', 'tr'],
    ],
  );
});

t.test('tailwind: true wraps the document in the Tailwind component', async (t) => {
  const out = fill(await compile(blocks({ ...EVERY_KIND, tailwind: true })), VALUES);
  const dom = parseDocument(out.html);
  t.equal(textContent(elements(dom, 'h3')[0]!), 'Hello Ada');
  t.equal(elements(dom, 'head').length, 1);
});

t.test('with tailwind: true, utility classes become inline styles', async (t) => {
  const doc = {
    tailwind: true,
    body: [
      { kind: 'Text', text: 'Red', className: 'text-red-500 p-4' },
      { kind: 'Heading', text: 'Plain', level: 2 },
    ],
  };
  t.ok(documentSchema.safeParse(doc).success);
  const dom = parseDocument(fill(await compile(blocks(doc)), VALUES).html);
  const p = elements(dom, 'p').find((e) => textContent(e) === 'Red')!;
  t.match(getAttributeValue(p, 'style'), /color:rgb\(251,44,54\)/);
  t.match(getAttributeValue(p, 'style'), /padding:1rem/);
  t.notOk(getAttributeValue(p, 'class'), 'the classes are gone once inlined');
  t.notOk(
    documentSchema.safeParse({ body: [{ kind: 'Text', text: 'x', className: '<script>' }] }).success,
    'class names are Tailwind-shaped',
  );
});

t.test('every CodeBlock language renders', async (t) => {
  const body = CODE_LANGUAGES.map((language) => ({ kind: 'CodeBlock', code: 'a = {{x}}', language }));
  const out = fill(await compile(blocks({ body }, 'x')), { x: '1' });
  const pres = elements(parseDocument(out.html), 'pre');
  t.equal(pres.length, CODE_LANGUAGES.length);
  for (const pre of pres) t.equal(textOf(pre), 'a = 1');
});

t.test('private-use characters of the content stay as they are and are never filled', async (t) => {
  const out = fill(await compile(blocks({ body: [{ kind: 'Text', text: '\uE000 icon {{name}} \uE001' }] }, 'x')), {
    name: 'N',
  });
  t.match(out.html, /\uE000 icon N \uE001/);
  t.match(out.text, /\uE000 icon N \uE001/);
});

t.test('styles stored under older rules are dropped at render, not sent', async (t) => {
  const version: RenderableContent = {
    engine: 'blocks',
    subject: 'x',
    document: {
      body: [
        { kind: 'Text', text: 'old', style: { position: 'fixed', color: 'red', background: 'url(javascript:x)' } },
      ],
    },
    html: null,
  };
  const p = elements(parseDocument(fill(await compile(version), {}).html), 'p')[0]!;
  t.match(style(p), /color:red/);
  t.notMatch(style(p), /position|javascript/);
});

// ---------------------------------------------------------------------------------------------
// The html engine

const DIRTY = `<html><head><title>Title</title><style>p{color:red}</style><script>alert(1)</script></head>
<body style="background-color:#eeeeee;position:absolute">
<table role="presentation" width="600" cellpadding="0" cellspacing="0" border="0" align="center">
  <tr><td style="padding:16px;color:#333333;font-family:Arial, sans-serif;behavior:url(x.htc)" onclick="alert(1)">Hi {{ name }}</td></tr>
</table>
<a href="javascript:alert(1)">bad</a> <a href="{{url}}" onmouseover="x">good</a> <a href="mailto:a@example.com">mail</a>
<img src="https://cdn.example.com/a.png" alt="a" width="10"><img src="http://cdn.example.com/b.png"><img src="data:image/png;base64,AA">
<iframe src="https://example.com"></iframe><form action="https://example.com"><input name="q">form text</form>
<p style="color:blue;background:url(https://cdn.example.com/bg.png)">styled</p><p style="background:url(http://x.example.com/a.png)">insecure bg</p>
</body></html>`;

t.test(
  'sanitiseHtml removes scripts, handlers and javascript: links, keeps tables and allowed inline styles',
  async (t) => {
    const clean = sanitiseHtml(DIRTY);
    const dom = parseDocument(clean);
    for (const tag of ['script', 'style', 'title', 'head', 'iframe', 'form', 'input'])
      t.equal(elements(dom, tag).length, 0, tag);
    t.notMatch(clean, /Title|alert|p\{color/);
    t.equal(findAll((e) => Object.keys(e.attribs).some((a) => a.startsWith('on')), dom.children).length, 0);

    const table = elements(dom, 'table')[0]!;
    t.same(
      [getAttributeValue(table, 'width'), getAttributeValue(table, 'cellpadding'), getAttributeValue(table, 'role')],
      ['600', '0', 'presentation'],
    );
    const td = elements(dom, 'td')[0]!;
    t.equal(style(td), 'padding:16px;color:#333333;font-family:Arial, sans-serif');
    t.equal(textContent(td), 'Hi {{ name }}');
    t.equal(style(elements(dom, 'body')[0]), 'background-color:#eeeeee');

    const anchors = elements(dom, 'a').map((a) => [textContent(a), getAttributeValue(a, 'href') ?? null]);
    t.same(anchors, [
      ['bad', null],
      ['good', '{{url}}'],
      ['mail', 'mailto:a@example.com'],
    ]);
    const srcs = elements(dom, 'img').map((i) => getAttributeValue(i, 'src') ?? null);
    t.same(srcs, ['https://cdn.example.com/a.png', null, null], 'images over https only');
    const ps = elements(dom, 'p');
    t.equal(style(ps[0]), 'color:blue;background:url(https://cdn.example.com/bg.png)');
    t.equal(style(ps[1]), '');
    t.match(textContent(dom), /form text/);
    t.equal(sanitiseHtml(clean), clean, 'sanitising is idempotent');
  },
);

t.test('the html engine renders sanitised markup with values escaped, and its plain text', async (t) => {
  const renderer = createTemplateRenderer({ cacheSize: 10 });
  const version: RenderableContent = { engine: 'html', subject: 'For {{name}}', document: null, html: DIRTY };
  const out = await renderer.render('h1', version, { name: '<i>Ada</i>', url: 'https://example.com/x' });
  const dom = parseDocument(out.html);
  t.equal(textContent(elements(dom, 'td')[0]!), 'Hi <i>Ada</i>');
  t.equal(elements(dom, 'i').length, 0);
  t.equal(getAttributeValue(elements(dom, 'a')[1]!, 'href'), 'https://example.com/x');
  t.equal(elements(dom, 'script').length, 0);
  t.equal(out.subject, 'For <i>Ada</i>');
  t.match(out.text, /Hi <i>Ada<\/i>/);
  t.match(out.text, /good https:\/\/example\.com\/x/);
  t.notMatch(out.text, /Title|alert/);
});

// ---------------------------------------------------------------------------------------------
// Compile once, fill many

t.test('a compiled version is kept under its key, least recently used dropped first', async (t) => {
  const renderer = createTemplateRenderer({ cacheSize: 2 });
  const v = blocks(EVERY_KIND);
  const a = await renderer.compile('a', v);
  t.equal(await renderer.compile('a', v), a, 'the same key answers the same compiled form');
  const b = await renderer.compile('b', v);
  await renderer.compile('a', v); // a is now the most recently used
  await renderer.compile('c', v); // drops b
  t.equal(await renderer.compile('a', v), a);
  t.not(await renderer.compile('b', v), b, 'b was dropped and compiled again');
  t.not(await renderer.compile(null, v), a, 'a null key compiles without the cache');

  const none = createTemplateRenderer({ cacheSize: 0 });
  t.not(await none.compile('a', v), await none.compile('a', v), 'cacheSize 0 turns the cache off');

  const [x, y] = await Promise.all([renderer.compile('same', v), renderer.compile('same', v)]);
  t.equal(x, y, 'concurrent compiles of one key share the work');
});

t.test('renders of one compiled version with different values do not leak into each other', async (t) => {
  const renderer = createTemplateRenderer({ cacheSize: 2 });
  const v = blocks(EVERY_KIND);
  const [one, two] = await Promise.all([
    renderer.render('k', v, { ...VALUES, first_name: 'One' }),
    renderer.render('k', v, { ...VALUES, first_name: 'Two' }),
  ]);
  t.match(one.subject, /One/);
  t.match(two.subject, /Two/);
  t.notMatch(one.html, /Two/);
  t.notMatch(two.html, /One/);
});

t.test('the preview line is rendered whole, up to its 256 characters', async (t) => {
  const preview = `${'p'.repeat(240)} {{first_name}}`;
  const out = fill(await compile(blocks({ preview, body: [{ kind: 'Text', text: 'x' }] }, 'x')), { first_name: 'Ada' });
  const div = findOne(
    (e) => getAttributeValue(e, 'data-skip-in-text') === 'true',
    parseDocument(out.html).children,
    true,
  )!;
  t.equal(textContent(div), `${'p'.repeat(240)} Ada`);
  t.match(style(div), /display:none/);
});
