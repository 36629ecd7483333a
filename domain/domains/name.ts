import { domainToASCII } from 'node:url';
import { parse } from 'tldts';
import { LONGEST_SELECTOR } from './selector.ts';

export type DomainNameCheck = { ok: true; domain: string } | { ok: false; reason: string };

/** The longest name DNS holds (RFC 1035 2.3.4, without the trailing dot). */
const MAX_NAME = 253;
/**
 * The domain's own DKIM record, `<selector>._domainkey.<domain>`, is its longest record name; a
 * domain whose record could not exist in DNS is refused up front.
 */
export const MAX_DOMAIN = MAX_NAME - LONGEST_SELECTOR - '._domainkey.'.length;
const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const DOTTED_QUAD = /^\d+\.\d+\.\d+\.\d+$/;
/** ASCII other than letters, digits, hyphen and dot; non-ASCII is left to IDNA. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the controls are among the characters refused
const FOREIGN_ASCII = /[\x00-\x2c\x2f\x3a-\x40\x5b-\x60\x7b-\x7f]/;

/**
 * A domain as a workspace may add it: trimmed, lower-cased, an IDN turned into punycode (UTS 46,
 * as browsers do), letters, digits and hyphens in labels of 1 to 63, under a suffix on the
 * public suffix list (ICANN and private sections), and not that suffix itself. Subdomains of a
 * registrable domain are allowed. `reason` reads as a 422 message.
 */
export function checkDomainName(input: string): DomainNameCheck {
  const shown = JSON.stringify(input.length > 80 ? `${input.slice(0, 80)}…` : input);
  const trimmed = input.trim().replace(/\.$/, '');
  if (trimmed === '') return { ok: false, reason: 'domain must not be empty' };
  if (trimmed.includes(':') || trimmed.startsWith('['))
    return { ok: false, reason: `${shown} is an IP address, not a domain` };
  const onlyLdh = `${shown} may hold only letters, digits and hyphens, and no label may start or end with a hyphen`;
  // domainToASCII parses a URL host: it would cut `example.com/path` at the slash and decode `%41`.
  if (FOREIGN_ASCII.test(trimmed)) return { ok: false, reason: onlyLdh };
  // The WHATWG host parser turns a name whose last label is a number into an IPv4 address
  // (`1.2.3` becomes `1.2.0.3`), so a dotted quad here was an address however it was written.
  const domain = domainToASCII(trimmed);
  if (DOTTED_QUAD.test(domain)) return { ok: false, reason: `${shown} is an IP address, not a domain` };
  if (domain === '') return { ok: false, reason: `${shown} is not a valid domain name` };
  const labels = domain.split('.');
  const bad = labels.find((label) => !LABEL.test(label));
  if (bad !== undefined) {
    return {
      ok: false,
      reason:
        bad === ''
          ? `${shown} has an empty label`
          : bad.length > 63
            ? `${shown} has a label longer than 63 characters`
            : onlyLdh,
    };
  }
  if (domain.length > MAX_DOMAIN)
    return {
      ok: false,
      reason: `${shown} is too long: at most ${MAX_DOMAIN} characters, so that its DKIM record name fits DNS`,
    };
  if (labels.length < 2) return { ok: false, reason: `${shown} is a top-level name; add a domain registered under it` };
  const parsed = parse(domain, { allowPrivateDomains: true });
  if (!parsed.isIcann && !parsed.isPrivate) return { ok: false, reason: `${shown} is not under a known public suffix` };
  if (parsed.domain === null)
    return { ok: false, reason: `${shown} is a public suffix; add a domain registered under it` };
  return { ok: true, domain };
}

/**
 * The organizational domain (RFC 7489 3.2): the registrable part of `domain`, whose DMARC record
 * applies to a subdomain without its own. The same list as above (private section included), so
 * a domain a workspace may add is always at or under its organizational domain.
 */
export function organizationalDomain(domain: string): string {
  return parse(domain, { allowPrivateDomains: true }).domain ?? domain;
}
