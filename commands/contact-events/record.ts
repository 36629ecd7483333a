import type { Item, Outcome, StoredEvent } from '../../domain/contact-events/decide.ts';
import { checkEvent, isBroken, type EventInput } from '../../domain/contact-events/rules.ts';
import { createContact } from '../contacts/handlers.ts';
import type { Actor, CommandContext } from '../execute.ts';
import { countNewContactEvents, recordContactEvents } from './handlers.ts';
import { newIds } from '../ids.ts';
import { fingerprintOf, keyStreamSuffix, newRequestStreamSuffix } from './streams.ts';

/** Events per minute per key (spec, Limits); a batch counts as its size. */
export const EVENT_RATE_LIMIT = 600;

export interface ContactRef {
  id: string;
  email: string;
}

/**
 * An allowance counted in units under an identity, in clock-minute windows: a take that would
 * pass `limit` takes nothing and is refused; a negative take gives units back.
 */
export interface Allowance {
  take(
    identity: string,
    units: number,
    limit: number,
    now: number,
  ): Promise<{ ok: boolean; remaining: number; resetSeconds: number }>;
}

/** What recording needs besides the event store; the api wires them (projections' queries, its rate limiter). */
export interface RecordingPorts {
  commands: CommandContext;
  /** Contacts of the workspace named by address or id, in one round trip. */
  lookupContacts(
    workspaceId: string,
    emails: string[],
    ids: string[],
  ): Promise<{ byEmail: Map<string, ContactRef>; byId: Map<string, ContactRef> }>;
  /** What enrolment made of stored live events: the automations each enrolled the contact in, the waits it ended. */
  outcomesOf(eventIds: string[]): Promise<Map<string, { enrolled: string[]; resumed: number }>>;
  allowance: Allowance;
}

export interface RecordRequest {
  actor: Actor;
  mode: 'live' | 'test';
  /** Whose allowance the stored events count against (`events:<key id>`). */
  allowanceIdentity: string;
  /** The request's Idempotency-Key: its positions replay; null for a request of its own. */
  idempotencyKey: string | null;
  inputs: EventInput[];
}

export type RecordAnswer =
  | { index: number; ok: true; event: StoredEvent; replayed: boolean; enrolled: string[]; resumed: number }
  | { index: number; ok: false; code: string; message: string; param: string | null };

export type Recorded = { rateLimited: false; answers: RecordAnswer[] } | { rateLimited: true; resetSeconds: number };

/**
 * Checks, finds (or makes) the contacts, stores in one append, and reads back what enrolment made
 * of each event. The rate limit counts only the events that will be stored (not refused positions,
 * not replays), decided before any contact is made, so a refused request makes and stores nothing.
 */
export async function recordContactEventRequest(ports: RecordingPorts, request: RecordRequest): Promise<Recorded> {
  const { actor, idempotencyKey } = request;
  const now = new Date();
  const nowIso = now.toISOString();
  const checked = request.inputs.map((input) => checkEvent(input, now));
  const valid = checked.flatMap((c) => (isBroken(c) ? [] : [c]));
  const contacts = await ports.lookupContacts(
    actor.workspaceId,
    valid.flatMap((c) => (c.email ? [c.email] : [])),
    valid.flatMap((c) => (c.contactId ? [c.contactId] : [])),
  );
  const toCreate = [
    ...new Map(
      valid.filter((c) => c.createContact && c.email && !contacts.byEmail.has(c.email)).map((c) => [c.email!, c]),
    ).values(),
  ];
  const resolve = itemsOf(checked, newIds('contactEvent', checked.length), { mode: request.mode, createdAt: nowIso });
  const target = {
    streamSuffix: idempotencyKey === null ? newRequestStreamSuffix() : keyStreamSuffix(idempotencyKey),
    fresh: idempotencyKey === null,
  };
  // Counting needs to know which events would be stored, not the ids of contacts not made yet.
  const planned = resolve(
    new Map([...contacts.byEmail, ...toCreate.map((c) => [c.email!, { id: '', email: c.email! }] as const)]),
    contacts.byId,
  );
  const units = await countNewContactEvents(ports.commands, actor, { ...target, items: planned.items });
  const identity = request.allowanceIdentity;
  if (units > 0) {
    const allowance = await ports.allowance.take(identity, units, EVENT_RATE_LIMIT, now.getTime());
    if (!allowance.ok) return { rateLimited: true, resetSeconds: allowance.resetSeconds };
  }
  let stored = 0;
  let outcomes: Outcome[] = [];
  let params = new Map<number, string>();
  try {
    // Ten at a time: each is a command of its own (the address's stream decides, so a concurrent create of one address is no race).
    for (let i = 0; i < toCreate.length; i += 10) {
      await Promise.all(
        toCreate.slice(i, i + 10).map(async (c) => {
          const made = await createContact(
            ports.commands,
            actor,
            { email: c.email!, name: c.contactName, source: 'auto' },
            nowIso,
          );
          contacts.byEmail.set(c.email!, { id: made.contactId, email: c.email! });
          contacts.byId.set(made.contactId, { id: made.contactId, email: c.email! });
        }),
      );
    }
    const resolved = resolve(contacts.byEmail, contacts.byId);
    params = resolved.params;
    outcomes = await recordContactEvents(ports.commands, actor, { ...target, items: resolved.items });
    stored = outcomes.filter((o) => o.kind === 'stored').length;
  } finally {
    // Fewer stored than counted: a request under the same key stored some positions first (here they replayed), or the append failed.
    // A negative take gives units back; the same instant lands it in the window the take counted in.
    if (stored < units) await ports.allowance.take(identity, stored - units, EVENT_RATE_LIMIT, now.getTime());
  }
  const started = outcomes.flatMap((o) => (o.kind === 'stored' && o.event.mode === 'live' ? [o.event.eventId] : []));
  const made = await ports.outcomesOf(started);
  const answers = outcomes.map((o): RecordAnswer => {
    if (o.kind === 'refused')
      return { index: o.index, ok: false, code: o.code, message: o.message, param: params.get(o.index) ?? null };
    const m = o.kind === 'stored' ? made.get(o.event.eventId) : undefined;
    return {
      index: o.index,
      ok: true,
      event: o.event,
      replayed: o.kind === 'replayed',
      enrolled: m?.enrolled ?? [],
      resumed: m?.resumed ?? 0,
    };
  });
  return { rateLimited: false, answers };
}

/** The items of a request once its contacts are known, with the param each refused position names. */
function itemsOf(
  checked: ReturnType<typeof checkEvent>[],
  ids: string[],
  stamp: { mode: 'live' | 'test'; createdAt: string },
) {
  return (byEmail: Map<string, ContactRef>, byId: Map<string, ContactRef>) => {
    const params = new Map<number, string>();
    const items = checked.map((c, index): Item => {
      if (isBroken(c)) {
        params.set(index, c.param);
        return { index, fingerprint: null, refused: { code: c.code, message: c.message } };
      }
      const fingerprint = fingerprintOf(c.canonical);
      const contact = c.email !== null ? byEmail.get(c.email) : byId.get(c.contactId!);
      if (!contact) {
        params.set(index, c.email !== null ? 'email' : 'contactId');
        const message =
          c.email === null
            ? `No contact ${c.contactId}.`
            : `No contact ${c.email} in the book (send \`createContact: true\` to make one).`;
        return { index, fingerprint, refused: { code: 'contact_not_found', message } };
      }
      if (c.email !== null && c.contactId !== null && contact.id !== c.contactId) {
        params.set(index, 'contactId');
        return {
          index,
          fingerprint,
          refused: { code: 'invalid_event', message: '`contactId` and `email` name different contacts.' },
        };
      }
      return {
        index,
        fingerprint,
        ready: {
          eventId: ids[index]!,
          contactId: contact.id,
          email: contact.email,
          name: c.name,
          properties: c.properties,
          occurredAt: c.occurredAt,
          ...stamp,
        },
      };
    });
    return { items, params };
  };
}
