import {
  decideAddDomain,
  decideDeleteDomain,
  decideRotateDkimKey,
  decideSetDomainHost,
  decideUpdateDomainSettings,
  domainHostOrFail,
  domainNameOrFail,
} from '../../domain/domains/decide.ts';
import { domainStream, type DomainEvent, type DomainSettings, type HostKind } from '../../domain/domains/events.ts';
import type { MailHosts } from '../../domain/domains/records.ts';
import { domainAggregate, isLive, type DomainState } from '../../domain/domains/state.ts';
import { decideReleaseDomainName, decideReserveDomainName } from '../../domain/domain-names/decide.ts';
import { domainNameStream, type NameUse } from '../../domain/domain-names/events.ts';
import { domainNameAggregate, type NameHolder } from '../../domain/domain-names/state.ts';
import { fail } from '../../domain/shared/errors.ts';
import type { Dns } from '../../infra/dns/port.ts';
import type { SecretStore } from '../../infra/secrets/port.ts';
import { closeDomainAddresses } from '../addresses/handlers.ts';
import { execute, loadState, type Actor, type CommandContext } from '../execute.ts';
import { newId } from '../ids.ts';

/** What the domain commands reach outside (wired in system.ts). */
export interface DomainPorts {
  /** Checks ask DNS as it is: the uncached port, never the delivery cache. */
  dns: Dns;
  secrets: SecretStore;
  /** The hosts of this service that a domain's records point at. */
  hosts: MailHosts;
  /** A fresh 2048-bit RSA pair (infra/dkim/keys.ts). */
  newDkimKey(): Promise<{ privateKeyPem: string; publicKey: string }>;
  /**
   * The service's disposable domain (`TEMP_MAIL_DOMAIN`): no workspace may add it or a name under
   * it, so no address there, and no credential, can ever send as a disposable inbox.
   */
  disposableDomain?: string | null;
}

/** Where a DKIM private key lives in the vault. The domain id keeps an operator's view readable. */
export const dkimSecretId = (domainId: string, keyId: string) => `dkim:${domainId}:${keyId}`;

/**
 * The PEM of a key of a domain, for signing (`keyId` of the read model's signing key). Never logged,
 * never returned by the API.
 */
export async function dkimPrivateKey(secrets: SecretStore, domainId: string, keyId: string): Promise<string> {
  const pem = await secrets.get(dkimSecretId(domainId, keyId));
  if (pem === undefined) throw new Error(`the DKIM key ${keyId} of domain ${domainId} is not in the vault`);
  return pem;
}

export const loadDomain = async (ctx: CommandContext, workspaceId: string, domainId: string) =>
  (await loadState(ctx, domainStream(workspaceId, domainId), domainAggregate)).state;

const runDomain = (
  ctx: CommandContext,
  actor: Actor,
  domainId: string,
  decide: (s: DomainState) => DomainEvent[],
  options?: { likelyNew?: boolean },
) => execute(ctx, actor, domainStream(actor.workspaceId, domainId), domainAggregate, decide, options);

/** How the holder of a name stands, from its domain's own stream. */
async function standingOf(ctx: CommandContext, holder: NameHolder, name: string) {
  const state = await loadDomain(ctx, holder.workspaceId, holder.domainId);
  const uses =
    isLive(state) && (holder.use === 'domain' ? state.domain === name : state.hosts[holder.use].host === name);
  return { domainId: holder.domainId, deleted: state.deleted, uses };
}

/**
 * Holds `name` for the domain, service-wide; 409 (`domain_in_use`, `tracking_host_in_use`,
 * `storage_host_in_use`) when another domain holds it. `dryRun` decides without writing: a
 * refusal costs nothing then (no key generated).
 */
async function reserveName(
  ctx: CommandContext,
  actor: Actor,
  input: { name: string; use: NameUse; domainId: string; now: string },
  dryRun = false,
): Promise<void> {
  const stream = domainNameStream(input.name);
  const { state } = await loadState(ctx, stream, domainNameAggregate);
  const holder =
    state.holder && state.holder.domainId !== input.domainId ? await standingOf(ctx, state.holder, input.name) : null;
  const decide = (s: typeof state) => decideReserveDomainName(s, { ...input, workspaceId: actor.workspaceId, holder });
  if (dryRun) decide(state);
  else await execute(ctx, actor, stream, domainNameAggregate, decide);
}

async function releaseName(ctx: CommandContext, actor: Actor, name: string, use: NameUse, domainId: string) {
  await execute(ctx, actor, domainNameStream(name), domainNameAggregate, (s) =>
    decideReleaseDomainName(s, { name, use, domainId, now: new Date().toISOString() }),
  );
}

/**
 * Adds a domain: the name checked and reserved across the service, a DKIM key made and put in the
 * vault, then the domain's stream. The reservation comes first, so of two workspaces racing for a
 * name exactly one gets it; if the domain's own append then fails, the name is let go again.
 */
export async function addDomain(
  ctx: CommandContext,
  ports: DomainPorts,
  actor: Actor,
  input: { domain: string },
  now: string,
): Promise<string> {
  const domain = domainNameOrFail(input.domain);
  const disposable = ports.disposableDomain;
  if (disposable && (domain === disposable || domain.endsWith(`.${disposable}`)))
    fail('domain_in_use', `${domain} is the service's disposable domain.`, 'domain');
  const domainId = newId.domain();
  const reservation = { name: domain, use: 'domain' as const, domainId, now };
  await reserveName(ctx, actor, reservation, true);
  const key = await ports.newDkimKey();
  const keyId = newId.dkimKey();
  await ports.secrets.put(dkimSecretId(domainId, keyId), key.privateKeyPem);
  try {
    await reserveName(ctx, actor, reservation);
  } catch (error) {
    await ports.secrets.delete(dkimSecretId(domainId, keyId));
    throw error;
  }
  try {
    await runDomain(
      ctx,
      actor,
      domainId,
      (s) => decideAddDomain(s, { domainId, domain, dkim: { keyId, publicKey: key.publicKey }, now }),
      { likelyNew: true },
    );
  } catch (error) {
    await releaseName(ctx, actor, domain, 'domain', domainId);
    await ports.secrets.delete(dkimSecretId(domainId, keyId));
    throw error;
  }
  return domainId;
}

export interface UpdateDomainInput {
  settings: Partial<DomainSettings>;
  /** A host name, null to use ours again, undefined to leave it. */
  hosts: Partial<Record<HostKind, string | null>>;
}

/**
 * Settings and hosts in one append. Every input is checked and every new host reserved before the
 * domain's stream is written, so a 422 or 409 changes nothing; hosts given up are let go after.
 */
export async function updateDomain(
  ctx: CommandContext,
  actor: Actor,
  domainId: string,
  input: UpdateDomainInput,
  now: string,
): Promise<void> {
  const state = await loadDomain(ctx, actor.workspaceId, domainId);
  if (!isLive(state)) fail('resource_not_found', 'No such domain.', 'id');
  const changes: { kind: HostKind; host: string | null; previous: string | null }[] = [];
  for (const kind of ['tracking', 'storage'] as const) {
    const given = input.hosts[kind];
    if (given === undefined) continue;
    const host = given === null ? null : domainHostOrFail(state.domain, kind, given);
    if (host !== state.hosts[kind].host) changes.push({ kind, host, previous: state.hosts[kind].host });
  }
  const reserved: typeof changes = [];
  try {
    for (const change of changes) {
      if (change.host === null) continue;
      await reserveName(ctx, actor, { name: change.host, use: change.kind, domainId, now });
      reserved.push(change);
    }
    await runDomain(ctx, actor, domainId, (s) => [
      ...decideUpdateDomainSettings(s, { settings: input.settings, now }),
      ...changes.flatMap((c) => decideSetDomainHost(s, { kind: c.kind, host: c.host, now })),
    ]);
  } catch (error) {
    for (const c of reserved) await releaseName(ctx, actor, c.host!, c.kind, domainId);
    throw error;
  }
  for (const c of changes) if (c.previous !== null) await releaseName(ctx, actor, c.previous, c.kind, domainId);
}

/**
 * A new DKIM key, waiting beside the one that signs until its record is found; a key it replaces
 * while still waiting is dropped from the vault.
 */
export async function rotateDkimKey(
  ctx: CommandContext,
  ports: DomainPorts,
  actor: Actor,
  domainId: string,
  now: string,
): Promise<void> {
  if (!isLive(await loadDomain(ctx, actor.workspaceId, domainId))) fail('resource_not_found', 'No such domain.', 'id');
  const key = await ports.newDkimKey();
  const keyId = newId.dkimKey();
  await ports.secrets.put(dkimSecretId(domainId, keyId), key.privateKeyPem);
  let replaced: string | null = null;
  try {
    await runDomain(ctx, actor, domainId, (s) => {
      replaced = s.pendingDkim?.keyId ?? null;
      return decideRotateDkimKey(s, { keyId, publicKey: key.publicKey, now });
    });
  } catch (error) {
    await ports.secrets.delete(dkimSecretId(domainId, keyId));
    throw error;
  }
  if (replaced) await ports.secrets.delete(dkimSecretId(domainId, replaced));
}

/**
 * Deletes the domain, then frees its name and hosts for anyone and drops its keys. A crash in
 * between leaves names held by a deleted domain, which the next reservation takes over.
 */
export async function deleteDomain(
  ctx: CommandContext,
  ports: DomainPorts,
  actor: Actor,
  domainId: string,
  now: string,
): Promise<void> {
  if (!isLive(await loadDomain(ctx, actor.workspaceId, domainId))) fail('resource_not_found', 'No such domain.', 'id');
  // Refused while the domain has addresses (409 `domain_has_addresses`); closed for new ones after.
  await closeDomainAddresses(ctx, actor, domainId, now);
  const { state } = await runDomain(ctx, actor, domainId, (s) => decideDeleteDomain(s, { now }));
  await releaseName(ctx, actor, state.domain, 'domain', domainId);
  for (const kind of ['tracking', 'storage'] as const) {
    const host = state.hosts[kind].host;
    if (host !== null) await releaseName(ctx, actor, host, kind, domainId);
  }
  for (const key of [state.dkim, state.pendingDkim])
    if (key) await ports.secrets.delete(dkimSecretId(domainId, key.keyId));
}
