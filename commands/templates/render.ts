import { PLACEHOLDER } from '../../domain/templates/document.ts';
import { resolveValues, sampleValues } from '../../domain/templates/values.ts';
import type { Engine } from '../../domain/templates/events.ts';
import type { TemplateRenderer } from '../../infra/templates/port.ts';

/** The renderer port, as the api and the processes name it (the adapter is infra/templates/renderer.ts). */
export type { TemplateRenderer };

export interface RenderableVersion {
  id: string;
  published: boolean;
  engine: Engine;
  subject: string;
  document: Record<string, unknown> | null;
  html: string | null;
  sanitisedHtml: string | null;
  slots: Record<string, unknown>[];
  props: Record<string, unknown>[];
}

export interface Rendered {
  subject: string;
  html: string;
  text: string;
}

/**
 * Renders a version with the caller's prop and slot values. A published version is immutable, so
 * its compiled form is cached under its id; a draft may change in place, so its key also carries
 * the template revision it was read at. Html-engine markup goes out sanitised: a published version
 * as it was frozen, a draft as the renderer sanitises it now.
 */
export async function renderVersion(
  renderer: TemplateRenderer,
  version: RenderableVersion,
  revision: number,
  given: { props?: Record<string, unknown>; slots?: Record<string, unknown> },
): Promise<Rendered> {
  const values = resolveValues(version.props as never, version.slots as never, given);
  return renderer.render(keyOf(version, revision), contentOf(version), values);
}

const keyOf = (version: RenderableVersion, revision: number) =>
  version.published ? version.id : `${version.id}@${revision}`;

function contentOf(version: RenderableVersion) {
  const html = version.engine === 'html' ? (version.sanitisedHtml ?? version.html) : null;
  return { engine: version.engine, subject: version.subject, document: version.document, html };
}

export interface Previewed extends Rendered {
  /** The preview line (preheader) filled in; empty when the version has none. */
  preview: string;
  /** The values it was rendered with, samples included. */
  values: { props: Record<string, unknown>; slots: Record<string, unknown> };
}

/**
 * Renders a version for a person to look at: what was not given takes its default, else a sample
 * of its type (`sampleValues`), so nothing is refused for being missing; undeclared names still are.
 */
export async function previewVersion(
  renderer: TemplateRenderer,
  version: RenderableVersion,
  revision: number,
  given: { props?: Record<string, unknown>; slots?: Record<string, unknown> },
): Promise<Previewed> {
  const sampled = sampleValues(version.props as never, version.slots as never, given);
  const values = resolveValues(version.props as never, version.slots as never, sampled);
  const key = keyOf(version, revision);
  const content = contentOf(version);
  const [rendered, compiled] = await Promise.all([
    renderer.render(key, content, values),
    renderer.compile(key, content),
  ]);
  const preview = compiled.preview.replace(PLACEHOLDER, (_, name: string) => values[name] ?? '');
  return { ...rendered, preview, values: { props: { ...sampled.props }, slots: { ...sampled.slots } } };
}
