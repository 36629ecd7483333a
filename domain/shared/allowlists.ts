/**
 * Address and domain allowlists narrow a key or app to part of the workspace. Both null means the
 * whole workspace. Saved lower-cased, without duplicates, and an address on an allowlisted domain
 * is dropped (the domain already reaches it).
 */
export interface Allowlists {
  addressAllowlist: string[] | null;
  domainAllowlist: string[] | null;
}

export function normaliseAllowlists(input: Allowlists): Allowlists {
  const domains =
    input.domainAllowlist === null ? null : [...new Set(input.domainAllowlist.map((d) => d.trim().toLowerCase()))];
  const onDomain = new Set(domains ?? []);
  const addresses =
    input.addressAllowlist === null
      ? null
      : [...new Set(input.addressAllowlist.map((a) => a.trim().toLowerCase()))].filter(
          (a) => !onDomain.has(domainOf(a)),
        );
  return { addressAllowlist: addresses, domainAllowlist: domains };
}

export function domainOf(address: string): string {
  return address.slice(address.lastIndexOf('@') + 1);
}

export function isUnrestricted(a: Allowlists): boolean {
  return a.addressAllowlist === null && a.domainAllowlist === null;
}

/** Does `outer` reach every address and domain `inner` reaches? */
export function allowlistsWithin(inner: Allowlists, outer: Allowlists): { ok: true } | { ok: false; param: string } {
  if (isUnrestricted(outer)) return { ok: true };
  if (isUnrestricted(inner)) return { ok: false, param: 'addressAllowlist' };
  const outerDomains = new Set(outer.domainAllowlist ?? []);
  const outerAddresses = new Set(outer.addressAllowlist ?? []);
  const domainIndex = (inner.domainAllowlist ?? []).findIndex((d) => !outerDomains.has(d));
  if (domainIndex >= 0) return { ok: false, param: `domainAllowlist.${domainIndex}` };
  const addressIndex = (inner.addressAllowlist ?? []).findIndex(
    (a) => !outerAddresses.has(a) && !outerDomains.has(domainOf(a)),
  );
  if (addressIndex >= 0) return { ok: false, param: `addressAllowlist.${addressIndex}` };
  return { ok: true };
}
