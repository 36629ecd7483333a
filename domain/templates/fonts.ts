import type { FONT_FALLBACKS } from './document.ts';

/**
 * The fonts every mail client can show without downloading anything, as `GET /templates/fonts`
 * offers them: each is a `fonts` entry of a document as it stands (`url` null). A template may
 * also declare a hosted font by its own https file (woff2, woff, ttf, otf); clients that do not
 * fetch web fonts (most of Outlook, Gmail) fall back to `fallback`, so one of these is the safe
 * pick. At most `FONTS_MAX` (8) per template.
 */
export interface CatalogueFont {
  family: string;
  fallback: (typeof FONT_FALLBACKS)[number];
  category: 'sans-serif' | 'serif' | 'monospace';
  weights: number[];
  styles: ('normal' | 'italic')[];
}

const both: CatalogueFont['styles'] = ['normal', 'italic'];

export const FONT_CATALOGUE: readonly CatalogueFont[] = [
  { family: 'Arial', fallback: 'Helvetica', category: 'sans-serif', weights: [400, 700], styles: both },
  { family: 'Helvetica', fallback: 'Arial', category: 'sans-serif', weights: [400, 700], styles: both },
  { family: 'Verdana', fallback: 'sans-serif', category: 'sans-serif', weights: [400, 700], styles: both },
  { family: 'Tahoma', fallback: 'Verdana', category: 'sans-serif', weights: [400, 700], styles: ['normal'] },
  { family: 'Trebuchet MS', fallback: 'sans-serif', category: 'sans-serif', weights: [400, 700], styles: both },
  { family: 'Georgia', fallback: 'Times New Roman', category: 'serif', weights: [400, 700], styles: both },
  { family: 'Times New Roman', fallback: 'serif', category: 'serif', weights: [400, 700], styles: both },
  { family: 'Courier New', fallback: 'monospace', category: 'monospace', weights: [400, 700], styles: both },
];
