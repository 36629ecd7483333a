/**
 * The blocks engine: a document as a React Email tree, rendered to html. Loaded by the renderer on
 * its first blocks compile (React and React Email take most of a second to load, which a process
 * that never compiles one should not pay).
 */
import { createElement as h, type CSSProperties, type ReactElement, type ReactNode } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { render as renderEmail } from '@react-email/render';
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
import { CODE_LANGUAGES, styleProperty, unsafeStyleValue } from '../../domain/templates/document.ts';
import { sanitiseHtml } from './sanitise.ts';

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

/** A blocks document as html, each placeholder written by `put` (the renderer's stand-ins). */
export function renderBlocks(doc: Record<string, unknown>, put: (s: string) => string): Promise<string> {
  return renderEmail(emailTree(doc, put));
}
