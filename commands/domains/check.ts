import { decideRecordDomainCheck, domainLookups, type DomainAnswer } from '../../domain/domains/decide.ts';
import { domainStream } from '../../domain/domains/events.ts';
import { domainAggregate, isLive } from '../../domain/domains/state.ts';
import { fail } from '../../domain/shared/errors.ts';
import type { EventStore } from '../../infra/eventstore/port.ts';
import { lookup } from '../../infra/dns/port.ts';
import { execute, type Actor, type CommandContext } from '../execute.ts';
import { dkimSecretId, loadDomain, type DomainPorts } from './handlers.ts';

export type CheckTrigger = 'request' | 'read' | 'schedule';

/**
 * Looks the domain's records up in DNS, all at once, and records what was found (DomainChecked,
 * and the transitions webhooks carry). Each lookup settles on its own within the DNS port's
 * deadline, so one silent name costs this check that deadline and no other check anything. A
 * key replaced by a rotation whose record was found is dropped from the vault.
 */
export async function checkDomainRecords(
  ctx: CommandContext,
  ports: DomainPorts,
  actor: Actor,
  domainId: string,
  trigger: CheckTrigger,
): Promise<void> {
  const state = await loadDomain(ctx, actor.workspaceId, domainId);
  if (!isLive(state)) fail('resource_not_found', 'No such domain.', 'id');
  const answers: DomainAnswer[] = await Promise.all(
    domainLookups(state, ports.hosts).map(async (l) => ({ ...l, answer: await lookup(ports.dns, l.type, l.name) })),
  );
  const now = new Date().toISOString();
  const { events } = await execute(ctx, actor, domainStream(actor.workspaceId, domainId), domainAggregate, (s) =>
    decideRecordDomainCheck(s, { answers, hosts: ports.hosts, trigger, now }),
  );
  for (const e of events)
    if (e.type === 'DomainDkimKeyActivated') await ports.secrets.delete(dkimSecretId(domainId, e.data.previousKeyId));
}

/** Checks under way in this process, per event store and domain stream: concurrent reads share one. */
const underWay = new WeakMap<EventStore, Map<string, Promise<void>>>();

/**
 * The re-check a read of an unverified domain makes (domain/domains/rechecks.ts says when): reads
 * arriving while one runs wait for it rather than asking DNS again.
 */
export function recheckForRead(ctx: CommandContext, ports: DomainPorts, actor: Actor, domainId: string): Promise<void> {
  const running = underWay.get(ctx.store) ?? new Map<string, Promise<void>>();
  underWay.set(ctx.store, running);
  const key = domainStream(actor.workspaceId, domainId);
  const existing = running.get(key);
  if (existing) return existing;
  const check = checkDomainRecords(ctx, ports, actor, domainId, 'read').finally(() => running.delete(key));
  running.set(key, check);
  return check;
}
