/**
 * Renders template versions to a message's subject, html and plain text.
 *
 * Compile once, fill many. `compile` turns a version into html and text with every placeholder
 * still in it; `fill` puts the values in. React (blocks engine) and sanitize-html (html engine) run
 * only in `compile`; a published version is compiled once and kept in a small LRU cache keyed by
 * what the caller names it (its version id), so repeated sends of it only fill.
 *
 * While compiling, each `{{name}}` is stood in for by one character of Unicode's private use area
 * (U+E000 on, skipping any the content itself uses). A single character passes untouched through
 * everything between the document and the html: React's escaping, Markdown (where `_` in
 * `{{first_name}}` would start emphasis), Prism's tokenising in CodeBlock (which splits `{{` into
 * two tokens), html-to-text (which upper-cases headings). The compiled html and text are then cut
 * at those characters into static parts and holes, and `fill` joins them with the values: escaped
 * for html (& < > " '), raw for text, and for the subject raw with line breaks turned to spaces.
 */
import { createElement as h, type CSSProperties, type ReactElement, type ReactNode } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { render as renderEmail, toPlainText } from '@react-email/render';
import {
  Body,
  Button,
  CodeBlock,
  CodeInline,
  Column,
  Container,
  dracula,
  Font,
  Head,
  Heading,
  Hr,
  Html,
  Img,
  Link,
  Markdown,
  Row,
  Section,
  Tailwind,
  Text,
} from '@react-email/components';
import sanitize from 'sanitize-html';
import {
  CODE_LANGUAGES,
  PLACEHOLDER,
  STYLE_PROPERTIES,
  styleProperty,
  unsafeStyleValue,
} from '../../domain/templates/document.ts';
import type { CompiledForm, RenderableContent, RenderedMessage, TemplateRenderer } from './port.ts';

/** A hole in a compiled part: the placeholder's name, and whether it starts a URL attribute. */
interface Hole {
  name: string;
  url: boolean;
}
/** Static text around holes: `statics.length === holes.length + 1`. */
interface Segments {
  statics: string[];
  holes: Hole[];
}

/** A version compiled (see the port), plus the cut form `fill` uses. */
export interface CompiledTemplate extends CompiledForm {
  readonly segments: { subject: Segments; html: Segments; text: Segments };
}

// ---------------------------------------------------------------------------------------------
// Stand-ins for placeholders

const PUA_FIRST = 0xe000;
const PUA_LAST = 0xf8ff;
const PUA_CHAR = /[\uE000-\uF8FF]/g;

interface StandIns {
  /** name → its stand-in character */
  byName: Map<string, string>;
  /** stand-in character → name */
  byChar: Map<string, string>;
  /** Replaces every `{{name}}` in `text` by the name's stand-in. */
  put(text: string): string;
}

/** Gives every placeholder name in `sources` a private-use character none of them contains. */
function standIns(sources: readonly string[]): StandIns {
  const used = new Set<number>();
  const names = new Set<string>();
  for (const s of sources) {
    for (const m of s.matchAll(PUA_CHAR)) used.add(m[0].codePointAt(0)!);
    for (const m of s.matchAll(PLACEHOLDER)) names.add(m[1]!);
  }
  const byName = new Map<string, string>();
  const byChar = new Map<string, string>();
  let next = PUA_FIRST;
  for (const name of names) {
    while (used.has(next)) next++;
    if (next > PUA_LAST) throw new Error('Too many placeholders to compile.');
    const char = String.fromCharCode(next++);
    byName.set(name, char);
    byChar.set(char, name);
  }
  return {
    byName,
    byChar,
    put: (text) => (byName.size === 0 ? text : text.replace(PLACEHOLDER, (_, name: string) => byName.get(name)!)),
  };
}

const URL_ATTRIBUTES = new Set(['href', 'src', 'background', 'action', 'cite', 'poster', 'xlink:href']);

/**
 * Cuts `html` at the stand-ins. With `attributes`, a stand-in at the very start of a URL-valued
 * attribute is marked, so `fill` can refuse a value that is not an http(s) or mailto address there.
 */
function cut(text: string, s: StandIns, attributes: boolean): Segments {
  const statics: string[] = [];
  const holes: Hole[] = [];
  if (s.byChar.size === 0) return { statics: [text], holes };
  const chars = new RegExp(`[${[...s.byChar.keys()].join('')}]`, 'g');
  let from = 0;
  for (const m of text.matchAll(chars)) {
    const at = m.index;
    statics.push(text.slice(from, at));
    holes.push({ name: s.byChar.get(m[0])!, url: attributes && startsUrlAttribute(text, at) });
    from = at + 1;
  }
  statics.push(text.slice(from));
  return { statics, holes };
}

function startsUrlAttribute(html: string, at: number): boolean {
  const lt = html.lastIndexOf('<', at);
  if (lt < 0 || html.lastIndexOf('>', at) > lt) return false;
  const m = /([^\s"'=<>/]+)\s*=\s*["']?([^"']*)$/.exec(html.slice(lt, at));
  return m !== null && URL_ATTRIBUTES.has(m[1]!.toLowerCase()) && m[2]!.trim() === '';
}

/** The readable form: stand-ins back to `{{name}}`. */
function readable(seg: Segments): string {
  let out = seg.statics[0]!;
  for (let i = 0; i < seg.holes.length; i++) out += `{{${seg.holes[i]!.name}}}${seg.statics[i + 1]!}`;
  return out;
}

// ---------------------------------------------------------------------------------------------
// Filling

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escapeHtml = (s: string) => (/[&<>"']/.test(s) ? s.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!) : s);
const SAFE_URL_START = /^\s*(?:https?:|mailto:)/i;

function join(seg: Segments, value: (hole: Hole) => string): string {
  let out = seg.statics[0]!;
  const { holes, statics } = seg;
  for (let i = 0; i < holes.length; i++) out += value(holes[i]!) + statics[i + 1]!;
  return out;
}

/**
 * Puts `values` into a compiled template. A name without a value becomes the empty string. In the
 * html every value is escaped; one that starts a URL attribute and is not an http(s) or mailto
 * address becomes empty there. The text takes values raw; the subject takes them raw with line
 * breaks turned to spaces.
 */
export function fill(compiled: CompiledTemplate, values: Readonly<Record<string, string>>): RenderedMessage {
  const raw = (name: string) => (Object.hasOwn(values, name) ? values[name]! : '');
  const escaped = new Map<string, string>();
  const html = join(compiled.segments.html, (hole) => {
    const value = raw(hole.name);
    if (hole.url && value !== '' && !SAFE_URL_START.test(value)) return '';
    let e = escaped.get(hole.name);
    if (e === undefined) {
      e = escapeHtml(value);
      escaped.set(hole.name, e);
    }
    return e;
  });
  const text = join(compiled.segments.text, (hole) => raw(hole.name));
  const subject = join(compiled.segments.subject, (hole) => raw(hole.name).replace(/[\r\n]+/g, ' '));
  return { subject, html, text };
}

// ---------------------------------------------------------------------------------------------
// Sanitising (the html engine, and Markdown's output)

/** Matches the style values `unsafeStyleValue` accepts (for sanitize-html, which takes regexes). */
const SAFE_STYLE_VALUE = /^(?![\s\S]*(?:expression\(|javascript:|\/\*|url\(\s*['"]?(?!https:\/\/)))[^;{}<>\\]{0,200}$/i;
const SANITISED_STYLES = [...STYLE_PROPERTIES, 'word-wrap', 'overflow-wrap'];
const COMMON_ATTRIBUTES = ['style', 'align', 'valign', 'width', 'height', 'bgcolor', 'dir', 'lang', 'title'];

/**
 * An allowlist for mail: layout tables, text formatting, links (http, https, mailto), images over
 * https, inline styles limited to the properties blocks may use. No scripts, styles, iframes,
 * forms, event handlers, classes or ids; `<head>` is dropped with its content.
 */
export const MAIL_SANITIZE_OPTIONS: sanitize.IOptions = {
  allowedTags: [
    'html',
    'body',
    'div',
    'span',
    'p',
    'br',
    'hr',
    'center',
    'font',
    'h1',
    'h2',
    'h3',
    'h4',
    'h5',
    'h6',
    'a',
    'img',
    'b',
    'strong',
    'i',
    'em',
    'u',
    's',
    'strike',
    'del',
    'ins',
    'mark',
    'small',
    'big',
    'sub',
    'sup',
    'tt',
    'abbr',
    'address',
    'cite',
    'q',
    'dfn',
    'kbd',
    'samp',
    'var',
    'code',
    'pre',
    'blockquote',
    'bdi',
    'bdo',
    'wbr',
    'ul',
    'ol',
    'li',
    'dl',
    'dt',
    'dd',
    'table',
    'caption',
    'colgroup',
    'col',
    'thead',
    'tbody',
    'tfoot',
    'tr',
    'th',
    'td',
    'section',
    'article',
    'header',
    'footer',
    'main',
    'figure',
    'figcaption',
  ],
  allowedAttributes: {
    '*': COMMON_ATTRIBUTES,
    a: ['href', 'name', 'target', 'rel'],
    img: ['src', 'alt', 'border'],
    table: ['border', 'cellpadding', 'cellspacing', 'background', 'role'],
    td: ['colspan', 'rowspan', 'nowrap', 'background'],
    th: ['colspan', 'rowspan', 'nowrap', 'background', 'scope'],
    body: ['background'],
    col: ['span'],
    colgroup: ['span'],
    font: ['color', 'face', 'size'],
    ol: ['start', 'type'],
    ul: ['type'],
    li: ['value'],
    blockquote: ['cite'],
    q: ['cite'],
  },
  allowedStyles: { '*': Object.fromEntries(SANITISED_STYLES.map((p) => [p, [SAFE_STYLE_VALUE]])) },
  allowedSchemes: ['http', 'https', 'mailto'],
  allowedSchemesByTag: { img: ['https'] },
  allowedSchemesAppliedToAttributes: ['href', 'src', 'cite', 'background'],
  allowProtocolRelative: false,
  nonTextTags: ['script', 'style', 'textarea', 'option', 'noscript', 'head', 'title', 'template', 'xml'],
  disallowedTagsMode: 'discard',
  enforceHtmlBoundary: false,
};

/** The html engine's markup made safe to send; `{{placeholders}}` stay as they are. */
export function sanitiseHtml(html: string): string {
  return sanitize(html, MAIL_SANITIZE_OPTIONS);
}

// ---------------------------------------------------------------------------------------------
// Plain text

const TEXT_OPTIONS = {
  selectors: [
    ...['h1', 'h2', 'h3', 'h4', 'h5', 'h6'].map((selector) => ({ selector, options: { uppercase: false } })),
    // CodeInline writes its text twice: in <code> and, for one mail client, in a hidden span.
    { selector: 'span.cio', format: 'skip' },
  ],
};
/** CodeBlock writes each space as NBSP + ZWJ + ZWSP so it survives mail clients; text wants spaces. */
const CODE_SPACE = /\u00A0\u200D\u200B/g;

function plainText(html: string): string {
  return toPlainText(html, TEXT_OPTIONS).replace(CODE_SPACE, ' ');
}

// ---------------------------------------------------------------------------------------------
// Blocks → React Email

type Loose = Record<string, unknown>;
const str = (v: unknown, fallback = ''): string => (typeof v === 'string' ? v : fallback);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** A style bag in React's camelCase, dropping (for content stored under older rules) anything not allowed now. */
function reactStyle(style: unknown): CSSProperties | undefined {
  if (style === null || typeof style !== 'object') return undefined;
  const out: Record<string, string | number> = {};
  for (const [key, value] of Object.entries(style as Loose)) {
    const property = styleProperty(key);
    if (property === null) continue;
    const fine =
      typeof value === 'number'
        ? Number.isFinite(value)
        : typeof value === 'string' && unsafeStyleValue(value) === null;
    if (!fine) continue;
    out[property.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase())] = value as string | number;
  }
  return Object.keys(out).length > 0 ? (out as CSSProperties) : undefined;
}

const LANGUAGES = new Set<string>(CODE_LANGUAGES);

function fontFormat(url: string): 'woff2' | 'woff' | 'truetype' | 'opentype' | 'embedded-opentype' | 'svg' {
  const ext = /\.([a-z0-9]+)(?:[?#].*)?$/i.exec(url)?.[1]?.toLowerCase();
  switch (ext) {
    case 'woff':
      return 'woff';
    case 'ttf':
      return 'truetype';
    case 'otf':
      return 'opentype';
    case 'eot':
      return 'embedded-opentype';
    case 'svg':
      return 'svg';
    default:
      return 'woff2';
  }
}

/** Text with its line breaks as <br/>. */
function lines(text: string): ReactNode {
  if (!text.includes('\n')) return text;
  const out: ReactNode[] = [];
  text.split(/\r\n|\r|\n/).forEach((line, i) => {
    if (i > 0) out.push(h('br', { key: `br${i}` }));
    out.push(line);
  });
  return out;
}

function markdown(source: string, style: CSSProperties | undefined, key: number): ReactElement {
  // react-email's Markdown passes raw html, javascript: links and unescaped hrefs through marked,
  // so its output is sanitised like html-engine markup before it joins the message.
  // biome-ignore lint/correctness/noChildrenProp: react-email types `children` as a required prop, so createElement must be given it there
  const rendered = renderToStaticMarkup(h(Markdown, { markdownContainerStyles: style, children: source }));
  return h('div', { key, dangerouslySetInnerHTML: { __html: sanitiseHtml(rendered) } });
}

interface Ctx {
  put: (text: string) => string;
}

function block(node: unknown, key: number, parent: string | null, ctx: Ctx): ReactNode {
  if (node === null || typeof node !== 'object') return null;
  const b = node as Loose;
  const style = reactStyle(b.style);
  const className = typeof b.className === 'string' && b.className.trim() !== '' ? b.className : undefined;
  const put = ctx.put;
  switch (b.kind) {
    case 'Section':
      return h(Section, { key, style, className }, children(b, 'Section', ctx));
    case 'Container':
      return h(Container, { key, style, className }, children(b, 'Container', ctx));
    case 'Row':
      // A row's cells are columns: anything else in it gets a column of its own.
      return h(Row, {
        key,
        style,
        // biome-ignore lint/correctness/noChildrenProp: react-email types `children` as a required prop, so createElement must be given it there
        children: list(b.children).map((c, i) =>
          (c as Loose | null)?.kind === 'Column'
            ? block(c, i, 'Row', ctx)
            : h(Column, { key: i }, block(c, 0, 'Column', ctx)),
        ),
      });
    case 'Column': {
      const column = h(Column, { key, style, className }, children(b, 'Column', ctx));
      // A column outside a row gets a row of its own, so the <td> sits in a <tr>.
      // biome-ignore lint/correctness/noChildrenProp: react-email types `children` as a required prop, so createElement must be given it there
      return parent === 'Row' ? column : h(Row, { key, children: column });
    }
    case 'Text':
      return h(Text, { key, style, className }, lines(put(str(b.text))));
    case 'Heading': {
      const level = typeof b.level === 'number' && b.level >= 1 && b.level <= 6 ? Math.trunc(b.level) : 2;
      return h(Heading, { key, style, className, as: `h${level}` as 'h1' }, put(str(b.text)));
    }
    case 'Button':
      return h(Button, { key, style, className, href: put(str(b.href)) }, put(str(b.text)));
    case 'Link':
      return h(Link, { key, style, className, href: put(str(b.href)) }, put(str(b.text)));
    case 'Img':
      return h(Img, {
        key,
        style,
        src: put(str(b.src)),
        alt: put(str(b.alt)),
        width: typeof b.width === 'number' ? b.width : undefined,
        height: typeof b.height === 'number' ? b.height : undefined,
      });
    case 'Hr':
      return h(Hr, { key, style, className });
    case 'Markdown':
      return markdown(put(str(b.markdown)), style, key);
    case 'CodeBlock': {
      const language = typeof b.language === 'string' && LANGUAGES.has(b.language) ? b.language : 'plaintext';
      return h(CodeBlock, {
        key,
        style,
        className,
        code: put(str(b.code)),
        language: language as 'javascript',
        theme: dracula,
      });
    }
    case 'CodeInline':
      return h(CodeInline, { key, style, className }, put(str(b.code)));
    default:
      return null; // a kind this renderer does not know (never accepted by the schema)
  }
}

function children(b: Loose, parent: string, ctx: Ctx): ReactNode[] {
  return blocks(b.children, parent, ctx);
}

function blocks(nodes: unknown, parent: string, ctx: Ctx): ReactNode[] {
  return list(nodes).map((c, i) => block(c, i, parent, ctx));
}

/** Spaces react-email's Preview pads a short preview line with, so clients do not show body text after it. */
const PREVIEW_PADDING = '\u00A0\u200C\u200B\u200D\u200E\u200F\uFEFF';

/**
 * The preview line as react-email's Preview writes it (hidden, skipped in the text part), but
 * whole: Preview cuts it at 150 characters, the spec allows 256.
 */
function previewLine(text: string): ReactElement {
  const style: CSSProperties = {
    display: 'none',
    overflow: 'hidden',
    lineHeight: '1px',
    opacity: 0,
    maxHeight: 0,
    maxWidth: 0,
  };
  const padding = text.length < 150 ? h('div', null, PREVIEW_PADDING.repeat(150 - text.length)) : null;
  return h('div', { style, 'data-skip-in-text': true }, text, padding);
}

/**
 * The React Email tree of a document: Html > Head (fonts) > Body (document style) > Preview, then
 * a default Container (600px, centred) holding the body blocks. `tailwind` wraps head and body in
 * the Tailwind component.
 */
function emailTree(doc: Loose, put: (s: string) => string): ReactElement {
  const fonts = list(doc.fonts).flatMap((f, i) => {
    if (f === null || typeof f !== 'object') return [];
    const font = f as Loose;
    const url = typeof font.url === 'string' ? font.url : null;
    return [
      h(Font, {
        key: i,
        fontFamily: str(font.family, 'sans-serif'),
        fallbackFontFamily: str(font.fallback, 'sans-serif') as 'sans-serif',
        webFont: url ? { url, format: fontFormat(url) } : undefined,
        fontWeight: typeof font.weight === 'number' ? font.weight : 400,
        fontStyle: font.style === 'italic' ? 'italic' : 'normal',
      }),
    ];
  });
  const preview = typeof doc.preview === 'string' && doc.preview !== '' ? previewLine(put(doc.preview)) : null;
  const ctx: Ctx = { put };
  const content = [
    h(Head, { key: 'head' }, ...fonts),
    h(
      Body,
      { key: 'body', style: reactStyle(doc.style) },
      preview,
      h(Container, null, blocks(doc.body, 'Container', ctx)),
    ),
  ];
  return h(Html, null, doc.tailwind === true ? h(Tailwind, null, ...content) : content);
}

// ---------------------------------------------------------------------------------------------
// Compiling

/** Renders a version once, placeholders left in, into the form `fill` completes. */
export async function compile(version: RenderableContent): Promise<CompiledTemplate> {
  const doc = version.engine === 'blocks' ? ((version.document ?? { body: [] }) as Loose) : null;
  const preview = doc && typeof doc.preview === 'string' ? doc.preview : '';
  const s = standIns([version.subject, doc ? JSON.stringify(doc) : (version.html ?? '')]);

  let html: string;
  if (doc) {
    html = await renderEmail(emailTree(doc, s.put));
  } else {
    html = sanitiseHtml(s.put(version.html ?? ''));
  }
  const text = plainText(html);

  const segments = {
    subject: cut(s.put(version.subject), s, false),
    html: cut(html, s, true),
    text: cut(text, s, false),
  };
  return {
    subject: readable(segments.subject),
    html: readable(segments.html),
    text: readable(segments.text),
    preview,
    segments,
  };
}

// ---------------------------------------------------------------------------------------------
// The renderer the command layer holds

/** `cacheSize` compiled versions are kept, least recently used dropped first; 0 turns the cache off. */
export function createTemplateRenderer({ cacheSize }: { cacheSize: number }): TemplateRenderer {
  const cache = new Map<string, Promise<CompiledTemplate>>();

  function compiled(key: string | null, version: RenderableContent): Promise<CompiledTemplate> {
    if (key === null || cacheSize <= 0) return compile(version);
    const hit = cache.get(key);
    if (hit) {
      cache.delete(key);
      cache.set(key, hit);
      return hit;
    }
    const made = compile(version);
    cache.set(key, made);
    made.catch(() => {
      if (cache.get(key) === made) cache.delete(key);
    });
    while (cache.size > cacheSize) cache.delete(cache.keys().next().value!);
    return made;
  }

  return {
    compile: compiled,
    plainText,
    async render(key, version, values) {
      return fill(await compiled(key, version), values);
    },
  };
}
