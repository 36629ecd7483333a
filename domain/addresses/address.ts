import { checkDomainName } from '../domains/name.ts';

/**
 * Local parts the service answers itself on every domain: the role mailboxes RFC 2142 says a
 * domain must reach (postmaster, abuse, hostmaster, webmaster, noc, security), and the names mail
 * servers send their own reports as (mailer-daemon, root). DMARC reports go to postmaster
 * (domain/domains/records.ts), so a person's mailbox there would receive them instead of us.
 */
export const RESERVED_LOCAL_PARTS: readonly string[] = [
  'postmaster',
  'abuse',
  'hostmaster',
  'webmaster',
  'noc',
  'security',
  'mailer-daemon',
  'root',
];

/** RFC 5321 4.5.3.1.1. */
export const MAX_LOCAL_PART = 64;
/** RFC 5321 4.5.3.1.3: a path holds 256 octets with its angle brackets. */
export const MAX_ADDRESS = 254;

/**
 * RFC 5322 atext without `+`: `+` is the subaddress delimiter (mail to `name+tag@` reaches
 * `name@`), so it never starts an address of its own. Letters are lower-case by then.
 */
const ATOM = /^[a-z0-9!#$%&'*/=?^_`{|}~-]+$/;

export type AddressCheck =
  | { ok: true; address: string; localPart: string; domain: string }
  | { ok: false; reason: string };

/**
 * An address as a workspace may create it: trimmed and lower-cased (every large mail provider
 * treats local parts without case, and so do we); a dot-atom local part of at most 64 ASCII
 * characters, without `+`, dots neither leading, trailing nor doubled (quoted local parts and
 * SMTPUTF8 are refused: many servers on the way accept neither); a domain as `checkDomainName`
 * accepts it, IDNs in punycode. `*` is a catch-all, which is the domain's `catchAll` setting, not
 * an address. `reason` reads as a 422 message.
 */
export function checkAddress(input: string): AddressCheck {
  const trimmed = input.trim().toLowerCase();
  const at = trimmed.lastIndexOf('@');
  if (at < 0) return { ok: false, reason: 'must be an address: local part, @, domain' };
  const localPart = trimmed.slice(0, at);
  const domainCheck = checkDomainName(trimmed.slice(at + 1));
  if (!domainCheck.ok) return { ok: false, reason: domainCheck.reason };
  const reason = localPartProblem(localPart);
  if (reason) return { ok: false, reason };
  const address = `${localPart}@${domainCheck.domain}`;
  if (address.length > MAX_ADDRESS) return { ok: false, reason: `an address holds at most ${MAX_ADDRESS} characters` };
  return { ok: true, address, localPart, domain: domainCheck.domain };
}

function localPartProblem(local: string): string | null {
  if (local === '') return 'the local part (before @) must not be empty';
  if (local === '*')
    return 'a catch-all is not an address: turn `catchAll` on for the domain (PATCH /domains/{id}), and it reads as `*@<domain>`';
  if (local.length > MAX_LOCAL_PART) return `the local part holds at most ${MAX_LOCAL_PART} characters`;
  if (local.includes('+'))
    return 'the local part may not hold `+`: it is the subaddress delimiter (name+tag@ reaches name@)';
  if (local.startsWith('.') || local.endsWith('.') || local.includes('..'))
    return 'the local part may not start or end with a dot, nor hold two in a row';
  if (!local.split('.').every((atom) => ATOM.test(atom)))
    return "the local part holds only ASCII letters, digits and ! # $ % & ' * / = ? ^ _ ` { | } ~ - and single dots";
  return null;
}

export const isReservedLocalPart = (localPart: string): boolean => RESERVED_LOCAL_PARTS.includes(localPart);

/** `*@<domain>`: how a domain's catch-all is named wherever an address is (signatures, allowlists). */
export const catchAllOf = (domain: string) => `*@${domain}`;
