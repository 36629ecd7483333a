/**
 * Renders template versions to a message's subject, html and plain text.
 *
 * Compile once, fill many. `compile` turns a version into html and text with every placeholder
 * still in it; `fill` puts the values in. React (blocks engine, ./blocks.ts, loaded on first use)
 * and sanitize-html (html engine) run only in `compile`; a published version is compiled once and
 * kept in a small LRU cache keyed by what the caller names it (its version id), so repeated sends
 * of it only fill.
 *
 * While compiling, each `{{name}}` is stood in for by one character of Unicode's private use area
 * (U+E000 on, skipping any the content itself uses). A single character passes untouched through
 * everything between the document and the html: React's escaping, Markdown (where `_` in
 * `{{first_name}}` would start emphasis), Prism's tokenising in CodeBlock (which splits `{{` into
 * two tokens), html-to-text (which upper-cases headings). The compiled html and text are then cut
 * at those characters into static parts and holes, and `fill` joins them with the values: escaped
 * for html (& < > " '), raw for text, and for the subject raw with line breaks turned to spaces.
 */
import { toPlainText } from '@react-email/render';
import { PLACEHOLDER } from '../../domain/templates/document.ts';
import { sanitiseHtml } from './sanitise.ts';
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
// Compiling

/** Renders a version once, placeholders left in, into the form `fill` completes. */
export async function compile(version: RenderableContent): Promise<CompiledTemplate> {
  const doc = version.engine === 'blocks' ? ((version.document ?? { body: [] }) as Record<string, unknown>) : null;
  const preview = doc && typeof doc.preview === 'string' ? doc.preview : '';
  const s = standIns([version.subject, doc ? JSON.stringify(doc) : (version.html ?? '')]);

  let html: string;
  if (doc) {
    html = await (await import('./blocks.ts')).renderBlocks(doc, s.put);
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
