import { NAME_PATTERN } from '../../domain/templates/document.ts';

/** `{{{ x }}}` or `{{ x }}`: the inside, whatever the provider's dialect puts there. */
const TAG = /\{\{\{([^{}]*)\}\}\}|\{\{([^{}]*)\}\}/g;

/**
 * A provider's template text in our placeholder syntax (`{{name}}`), with the names it uses.
 * Triple braces (Resend's variables, handlebars' unescaped output) and double braces become
 * ours; a filter or fallback after `|` is dropped; `rename` maps a provider's dotted name onto
 * ours (Brevo's `params.NAME`). Block helpers (`{{#if}}`, `{{/each}}`, `{{else}}`, partials)
 * have no equivalent here: they are left as text and named in `warnings`.
 */
export function convertPlaceholders(
  text: string,
  rename: (name: string) => string = (name) => name,
): { text: string; names: string[]; warnings: string[] } {
  const names = new Set<string>();
  const warnings = new Set<string>();
  const converted = text.replace(TAG, (whole, triple: string | undefined, double: string | undefined) => {
    const inner = (triple ?? double ?? '').trim();
    if (/^[#/^!>]/.test(inner) || inner === 'else' || inner.startsWith('else ')) {
      warnings.add(`the block helper ${whole} has no equivalent and was left as text`);
      return whole;
    }
    const name = rename(inner.split('|')[0]!.trim()).replace(/[.-]/g, '_');
    if (!NAME_PATTERN.test(name)) {
      warnings.add(`the placeholder ${whole} has no equivalent and was left as text`);
      return whole;
    }
    names.add(name);
    return `{{${name}}}`;
  });
  return { text: converted, names: [...names], warnings: [...warnings] };
}

/** A template's subject and html converted together: one list of variables for both. */
export function convertTemplate(
  subject: string,
  html: string,
  rename?: (name: string) => string,
): { subject: string; html: string; variables: string[]; warnings: string[] } {
  const s = convertPlaceholders(subject.replace(/[\r\n]+/g, ' '), rename);
  const h = convertPlaceholders(html, rename);
  return {
    subject: s.text,
    html: h.text,
    variables: [...new Set([...s.names, ...h.names])],
    warnings: [...new Set([...s.warnings, ...h.warnings])],
  };
}
