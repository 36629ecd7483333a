import { fail } from '../shared/errors.ts';

/**
 * Characters of subject, text and html together that one translation takes (422
 * `translation_too_long` past it). The spec leaves the figure unshown: 50,000 fit one model
 * answer in the time a send may wait, with room for markup.
 */
export const TRANSLATION_MAX = 50_000;

/**
 * A batch holds at most this many messages when any of them asks for `translate` (422
 * `too_many_items`), instead of 100: each is a model call that may take the AI timeout, and a
 * batch answers once every item is done.
 */
export const TRANSLATED_BATCH_MAX = 10;

const languages = new Intl.DisplayNames(['en'], { type: 'language', fallback: 'none' });
const regions = new Intl.DisplayNames(['en'], { type: 'region', fallback: 'none' });
const scripts = new Intl.DisplayNames(['en'], { type: 'script', fallback: 'none' });

/**
 * The target language of a translation: a BCP 47 tag whose language, and script and region when
 * given, are known (`de`, `pt-BR`, `zh-Hant`). Canonical form and its English name, or 422
 * `unknown_language` naming `param`.
 */
export function targetLanguage(tag: string, param: string): { tag: string; name: string } {
  let canonical: string;
  let locale: Intl.Locale;
  try {
    canonical = Intl.getCanonicalLocales(tag)[0]!;
    locale = new Intl.Locale(canonical);
  } catch {
    return fail('unknown_language', `\`${tag}\` is not a BCP 47 language tag (such as \`de\` or \`pt-BR\`).`, param);
  }
  const name = knownName(canonical, locale);
  if (name === null) fail('unknown_language', `\`${tag}\` names no language we know.`, param);
  return { tag: canonical, name };
}

/** ICU's English name of a tag whose every part it knows; null otherwise (it throws on some, `und`). */
function knownName(canonical: string, locale: Intl.Locale): string | null {
  try {
    const known =
      languages.of(locale.language) !== undefined &&
      (locale.script === undefined || scripts.of(locale.script) !== undefined) &&
      (locale.region === undefined || regions.of(locale.region) !== undefined);
    return known ? (languages.of(canonical) ?? languages.of(locale.language)!) : null;
  } catch {
    return null;
  }
}

/** The parts of a message a translation covers, as sent: each present part comes back translated. */
export interface TranslatableParts {
  subject: string;
  text?: string;
  html?: string;
}

export function checkTranslationLength(parts: TranslatableParts): void {
  const length = parts.subject.length + (parts.text?.length ?? 0) + (parts.html?.length ?? 0);
  if (length > TRANSLATION_MAX)
    fail(
      'translation_too_long',
      `A translated message holds at most ${TRANSLATION_MAX} characters of subject, text and html together; this one has ${length}.`,
      'translate',
    );
}
