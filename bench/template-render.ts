/**
 * Template rendering, in process (no database, no HTTP): a 100-block template with 5 props,
 * rendered with different prop values each time.
 *
 *   template-render.cold    compile + fill on every render (cache off): what a draft preview costs
 *   template-render.cached  the published-version path: compiled once, then only filled
 *
 * Each render counts what a send pays: resolveValues on the given props, the render, and the
 * UTF-8 length of html and text (which flattens the joined strings as writing them out would).
 * One event loop, so one core; figures are per process.
 */
import { checkTemplateReferences, documentSchema, type Prop } from '../domain/templates/document.ts';
import { resolveValues } from '../domain/templates/values.ts';
import type { RenderableContent, TemplateRenderer } from '../infra/templates/port.ts';
import { createTemplateRenderer } from '../infra/templates/renderer.ts';
import { emit, msSince, note, round, Samples } from './support.ts';

const SECONDS = 5;

export const BENCH_PROPS: Prop[] = [
  { name: 'first_name', type: 'string', required: true, default: null, description: null },
  { name: 'company', type: 'string', required: false, default: 'Acme', description: null },
  { name: 'count', type: 'number', required: false, default: 0, description: null },
  { name: 'vip', type: 'boolean', required: false, default: false, description: null },
  { name: 'cta', type: 'url', required: true, default: null, description: null },
];

/** 100 blocks: a heading, then 9 groups of a section (row of two columns) and three loose blocks. */
export function benchDocument(): Record<string, unknown> {
  const body: Record<string, unknown>[] = [
    { kind: 'Heading', level: 1, text: 'Hello {{first_name}} of {{company}}', style: { textAlign: 'center' } },
  ];
  for (let g = 0; g < 9; g++) {
    body.push({
      kind: 'Section',
      style: { padding: '12px', backgroundColor: g % 2 ? '#ffffff' : '#f4f4f4' },
      children: [
        {
          kind: 'Row',
          children: [
            {
              kind: 'Column',
              style: { width: '50%', verticalAlign: 'top' },
              children: [
                { kind: 'Heading', level: 3, text: `Part ${g + 1} for {{first_name}}` },
                {
                  kind: 'Text',
                  text: `You have {{count}} new items in group ${g + 1}. VIP: {{vip}}.\nSee you soon, {{first_name}}.`,
                },
              ],
            },
            {
              kind: 'Column',
              children: [
                {
                  kind: 'Img',
                  src: `https://cdn.example.com/img/${g}.png`,
                  alt: 'Picture for {{first_name}}',
                  width: 240,
                  height: 120,
                },
                {
                  kind: 'Button',
                  text: 'Open {{company}}',
                  href: '{{cta}}',
                  style: { backgroundColor: '#0a66c2', color: '#ffffff', padding: '10px 16px' },
                },
              ],
            },
          ],
        },
      ],
    });
    body.push(
      g % 3 === 2
        ? { kind: 'CodeInline', code: 'ref-{{count}}' }
        : { kind: 'Text', text: `Note ${g}: {{company}} thanks {{first_name}}.` },
      g % 3 === 0
        ? {
            kind: 'CodeBlock',
            code: `const user = "{{first_name}}";\nconst items = {{count}};`,
            language: 'javascript',
          }
        : {
            kind: 'Markdown',
            markdown: `**{{first_name}}**, read [the notes]({{cta}}) for _{{company}}_.\n\n- one\n- two`,
          },
      g % 3 === 1
        ? { kind: 'Link', text: 'Manage {{company}} settings', href: 'https://example.com/settings' }
        : { kind: 'Hr' },
    );
  }
  return {
    preview: 'Your {{company}} digest, {{first_name}}',
    fonts: [{ family: 'Inter', url: 'https://fonts.example.com/inter.woff2' }],
    style: { backgroundColor: '#fafafa', fontFamily: 'Inter, Arial, sans-serif' },
    body,
  };
}

function countBlocks(nodes: unknown): number {
  return (Array.isArray(nodes) ? nodes : []).reduce(
    (n: number, b) => n + 1 + countBlocks((b as { children?: unknown }).children),
    0,
  );
}

const given = (i: number) => ({
  props: {
    first_name: `User ${i} <${i}@example.com>`,
    company: i % 7 ? `Company ${i % 13}` : 'Smith & Sons',
    count: i,
    vip: i % 2 === 0,
    cta: `https://example.com/u/${i}?ref=mail&n=${i}`,
  },
});

async function measure(renderer: TemplateRenderer, version: RenderableContent, key: (i: number) => string | null) {
  const samples = new Samples(1 << 14);
  let bytes = 0;
  let i = 0;
  const started = process.hrtime.bigint();
  const until = Date.now() + SECONDS * 1000;
  while (Date.now() < until) {
    const t0 = process.hrtime.bigint();
    const values = resolveValues(BENCH_PROPS, [], given(i));
    const out = await renderer.render(key(i), version, values);
    bytes = Buffer.byteLength(out.html) + Buffer.byteLength(out.text);
    samples.add(msSince(t0));
    i++;
  }
  const seconds = msSince(started) / 1000;
  const [p50, p99] = samples.percentiles([50, 99]);
  return { renders: i, seconds: round(seconds, 2), rendersPerSec: round(i / seconds), p50Ms: p50, p99Ms: p99, bytes };
}

export async function templateRenderBench(): Promise<void> {
  const document = documentSchema.parse(benchDocument());
  const blocks = countBlocks(document.body);
  const problem = checkTemplateReferences({ subject: 'Hi {{first_name}}', document, slots: [], props: BENCH_PROPS });
  if (problem) throw new Error(`bench template is invalid: ${problem.path.join('.')}: ${problem.message}`);
  const version: RenderableContent = {
    engine: 'blocks',
    subject: 'Hi {{first_name}}, your {{company}} digest',
    document,
    html: null,
  };

  note(`template-render: ${blocks} blocks, ${BENCH_PROPS.length} props; cold (compile + fill) for ${SECONDS} s`);
  const cold = await measure(createTemplateRenderer({ cacheSize: 0 }), version, () => null);
  await emit({ bench: 'template-render.cold', blocks, props: BENCH_PROPS.length, ...cold, cache: false });

  note(`template-render: cached published version (fill only) for ${SECONDS} s`);
  const renderer = createTemplateRenderer({ cacheSize: 100 });
  const warm = process.hrtime.bigint();
  await renderer.compile('tv_published', version);
  const compileMs = round(msSince(warm), 2);
  const cached = await measure(renderer, version, () => 'tv_published');
  await emit({
    bench: 'template-render.cached',
    blocks,
    props: BENCH_PROPS.length,
    ...cached,
    compileMs,
    cache: true,
    target: '>= 1000 renders/s on 2 cores',
  });
}
