import type { Engine } from '../../domain/templates/events.ts';

/** What the renderer needs of a version. `document` and `html` are loose JSON as stored. */
export interface RenderableContent {
  engine: Engine;
  subject: string;
  document: Record<string, unknown> | null;
  html: string | null;
}

export interface RenderedMessage {
  subject: string;
  html: string;
  text: string;
}

/** A version compiled: `subject`, `html`, `text` and `preview` with `{{name}}` placeholders in them (readable, e.g. to show a template unfilled). */
export interface CompiledForm {
  subject: string;
  html: string;
  text: string;
  preview: string;
}

/** The template renderer as the commands, the api and the processes hold it (the adapter: renderer.ts). */
export interface TemplateRenderer {
  /**
   * Renders `version` with `values` (from resolveValues). `key` names the content for the cache:
   * the same key must always mean the same content (a published version's id; a draft's id with
   * the revision it was read at). A null key compiles without caching.
   */
  render(
    key: string | null,
    version: RenderableContent,
    values: Readonly<Record<string, string>>,
  ): Promise<RenderedMessage>;
  /** The compiled form of a version (cached like `render`), e.g. to show it with its placeholders. */
  compile(key: string | null, version: RenderableContent): Promise<CompiledForm>;
  /** The text part of a mail whose html part is `html` (how a rendered version gets its text). */
  plainText(html: string): string;
}
