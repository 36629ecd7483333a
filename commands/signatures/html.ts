import sanitize from 'sanitize-html';
import { SIGNATURE_HTML_MAX } from '../../domain/signatures/decide.ts';
import { fail } from '../../domain/shared/errors.ts';
import type { Sanitise } from '../../domain/templates/decide.ts';

/** Code points, as lengths count everywhere in this service. */
const length = (s: string) => {
  let n = 0;
  for (const _ of s) n++;
  return n;
};

/** Spaces a reader does not see as text: entities of no-break and zero-width spaces, and the characters themselves. */
const BLANK = /&nbsp;|&#160;|&#x0*a0;|&#8203;|&#x0*200b;|[\s\u00a0\u200b\u200c\u2060\ufeff]|\u200d/gi;

/**
 * A signature's html as it is stored: sanitised like outgoing mail (the templates' sanitiser:
 * no scripts, handlers, forms or iframes; https images; http, https and mailto links), at most
 * 150,000 characters before and after, and keeping some text or an image. Refusals are 422
 * `invalid_parameter` on `param`.
 */
export function signatureHtml(raw: string, sanitiseHtml: Sanitise, param = 'html'): string {
  if (length(raw) > SIGNATURE_HTML_MAX) fail('invalid_parameter', `At most ${SIGNATURE_HTML_MAX} characters.`, param);
  const html = sanitiseHtml(raw).trim();
  if (length(html) > SIGNATURE_HTML_MAX)
    fail('invalid_parameter', `At most ${SIGNATURE_HTML_MAX} characters once sanitised (entities escaped).`, param);
  const text = sanitize(html, { allowedTags: [], allowedAttributes: {} }).replace(BLANK, '');
  const image = /<img\b[^>]*\ssrc="https:\/\/[^"]+"/i.test(html);
  if (text === '' && !image)
    fail(
      'invalid_parameter',
      'Once sanitised, nothing is left to show: a signature needs some text or an https image.',
      param,
    );
  return html;
}
