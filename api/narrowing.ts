import { allowlistsWithin, domainOf, normaliseAllowlists, type Allowlists } from '../domain/shared/allowlists.ts';
import { isNarrowed, type Credential } from './credential.ts';
import { ApiError } from './errors/api-error.ts';

/**
 * How credentials narrowed to some addresses or domains (`addressAllowlist`, `domainAllowlist`)
 * may use a resource: declared once per resource (api/route.ts), enforced by `route`, and stated
 * in the OpenAPI description of each of its operations.
 *
 * - `open`: the resource reaches no address; a narrowed credential uses it as any other (where its
 *   own authority matters, as for the keys it makes, the decider checks it).
 * - `refuse`: the resource belongs to the whole workspace; every operation is 422
 *   `capability_unsupported` on `addressAllowlist`, before scope and input checks.
 * - `read-only`: the whole workspace's list; a narrowed credential reads it whole, and every change
 *   is 422 `capability_unsupported` (`param` null), before scope and input checks.
 * - `within-lists`: reads are whole; a change reaches only what sits inside the caller's lists.
 *   Its handler names the lists the change reaches (`ctx.within(lists)`), once it knows them.
 * - `reach`: the resource is made of addresses; a narrowed credential sees and changes only the
 *   addresses its lists reach (`reachOf`), and the others answer as missing ones do (404).
 */
export type NarrowedPolicy = 'open' | 'refuse' | 'read-only' | 'within-lists' | 'reach';

const NARROWED = 'a credential narrowed to some addresses or domains';

/** The refusal of a whole operation under the policy, or null when the policy lets it run. */
export function narrowedRefusal(policy: NarrowedPolicy, method: string, credential: Credential): ApiError | null {
  if (!isNarrowed(credential)) return null;
  if (policy === 'refuse') {
    return new ApiError(
      'capability_unsupported',
      `This resource belongs to the whole workspace; ${NARROWED} cannot use it.`,
      'addressAllowlist',
    );
  }
  if (policy === 'read-only' && method !== 'GET') {
    return new ApiError(
      'capability_unsupported',
      `This list belongs to the whole workspace; ${NARROWED} reads it but cannot change it.`,
      null,
    );
  }
  return null;
}

/**
 * `within-lists`: a change reaching `lists` must sit inside the caller's own. The spec names
 * `addressAllowlist` as the param whichever list is the wider one.
 */
export function requireWithinLists(credential: Credential, lists: Allowlists): void {
  if (!allowlistsWithin(normaliseAllowlists(lists), credential).ok) {
    throw new ApiError(
      'capability_unsupported',
      'A credential narrowed to some addresses or domains changes only what sits inside its own lists.',
      'addressAllowlist',
    );
  }
}

/**
 * What a credential reaches under `reach`: null for the whole workspace; otherwise the addresses
 * listed and every address of the domains listed (those created later too).
 */
export function reachOf(credential: Credential): { addresses: string[]; domains: string[] } | null {
  if (!isNarrowed(credential)) return null;
  return { addresses: credential.addressAllowlist ?? [], domains: credential.domainAllowlist ?? [] };
}

/** Whether the credential reaches `address` (`*@<domain>`, a catch-all, only through its whole domain). */
export function reaches(credential: Credential, address: string): boolean {
  const reach = reachOf(credential);
  if (reach === null) return true;
  return reach.domains.includes(domainOf(address)) || (!address.startsWith('*@') && reach.addresses.includes(address));
}

/**
 * A write on `address` by a credential that does not reach it is 422 `capability_unsupported`:
 * `what` says what such a credential may do instead ("writes rules only of the mailboxes it holds").
 */
export function requireReach(credential: Credential, address: string, what: string, param = 'address'): void {
  if (!reaches(credential, address))
    throw new ApiError('capability_unsupported', `A credential narrowed to some addresses or domains ${what}.`, param);
}

/** The sentence the policy adds to an operation's description. */
export function narrowedDoc(policy: NarrowedPolicy, method: string): string | null {
  const reads = method === 'GET';
  switch (policy) {
    case 'open':
      return null;
    case 'refuse':
      return 'Not for credentials narrowed to some addresses or domains (422 `capability_unsupported` on `addressAllowlist`).';
    case 'read-only':
      return reads
        ? 'Credentials narrowed to some addresses or domains read it whole.'
        : 'Not for credentials narrowed to some addresses or domains (422 `capability_unsupported`).';
    case 'reach':
      return 'A credential narrowed to some addresses or domains sees and changes only the addresses its lists reach; others answer 404.';
    case 'within-lists':
      return reads
        ? 'Credentials narrowed to some addresses or domains read it whole.'
        : 'A credential narrowed to some addresses or domains changes only what sits inside its own lists (422 `capability_unsupported` on `addressAllowlist`).';
  }
}
