import { resolveValues } from '../../domain/templates/values.ts';
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
  const key = version.published ? version.id : `${version.id}@${revision}`;
  const html = version.engine === 'html' ? (version.sanitisedHtml ?? version.html) : null;
  return renderer.render(
    key,
    { engine: version.engine, subject: version.subject, document: version.document, html },
    values,
  );
}
