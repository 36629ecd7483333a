import { fail } from '../shared/errors.ts';
import type { ContactEvent, ContactSource } from './events.ts';
import type { ContactState } from './state.ts';

export const ATTRIBUTES_MAX = 50;
export const ATTRIBUTE_KEY = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;
export const ATTRIBUTE_VALUE_MAX = 500;
export const AUDIENCE_IDS_MAX = 25;

export interface CreateContact {
  contactId: string;
  email: string;
  name: string | null;
  notes: string | null;
  attributes: Record<string, string>;
  source: ContactSource;
  /** The default audience first, then the ones asked for; checked to exist by the caller. */
  audienceIds: string[];
  now: string;
}

/** An address already in the book keeps its contact: the caller answers 409 (or uses the id). */
export function decideCreateContact(state: ContactState, cmd: CreateContact): ContactEvent[] {
  if (state.contact) return [];
  return [
    {
      type: 'ContactCreated',
      data: {
        contactId: cmd.contactId,
        email: cmd.email,
        name: cmd.name,
        notes: cmd.notes,
        attributes: cmd.attributes,
        source: cmd.source,
        audienceIds: [...new Set(cmd.audienceIds)],
        createdAt: cmd.now,
      },
    },
  ];
}

export interface UpdateContact {
  /** Omitted keeps; null clears. */
  name?: string | null;
  notes?: string | null;
  /** Merged key by key; a null value removes the key. */
  attributes?: Record<string, string | null>;
  now: string;
}

const exists = (state: ContactState) =>
  state.contact ?? fail('contact_not_found', 'No contact with this address in the book.', 'email');

export function decideUpdateContact(state: ContactState, cmd: UpdateContact): ContactEvent[] {
  const c = exists(state);
  const attributes = { ...c.attributes };
  for (const [key, value] of Object.entries(cmd.attributes ?? {})) {
    if (value === null) delete attributes[key];
    else attributes[key] = value;
  }
  if (Object.keys(attributes).length > ATTRIBUTES_MAX) {
    fail(
      'invalid_parameter',
      `A contact holds at most ${ATTRIBUTES_MAX} attributes; this change would leave ${Object.keys(attributes).length}.`,
      'attributes',
    );
  }
  const name = cmd.name === undefined ? c.name : cmd.name;
  const notes = cmd.notes === undefined ? c.notes : cmd.notes;
  if (name === c.name && notes === c.notes && sameRecord(attributes, c.attributes)) return [];
  return [
    {
      type: 'ContactUpdated',
      data: { contactId: c.contactId, email: c.email, name, notes, attributes, updatedAt: cmd.now },
    },
  ];
}

function sameRecord(a: Record<string, string>, b: Record<string, string>): boolean {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => b[k] === a[k]);
}

export function decideDeleteContact(state: ContactState, cmd: { now: string }): ContactEvent[] {
  const c = exists(state);
  return [{ type: 'ContactDeleted', data: { contactId: c.contactId, email: c.email, deletedAt: cmd.now } }];
}

/** Joining an audience the contact is in already writes nothing. */
export function decideJoinAudience(state: ContactState, cmd: { audienceId: string; now: string }): ContactEvent[] {
  const c = exists(state);
  if (c.audienceIds.includes(cmd.audienceId)) return [];
  return [
    {
      type: 'ContactJoinedAudience',
      data: { contactId: c.contactId, email: c.email, audienceId: cmd.audienceId, joinedAt: cmd.now },
    },
  ];
}

/** Leaving an audience the contact is not in writes nothing. The default audience is refused by the caller. */
export function decideLeaveAudience(state: ContactState, cmd: { audienceId: string; now: string }): ContactEvent[] {
  const c = exists(state);
  if (!c.audienceIds.includes(cmd.audienceId)) return [];
  return [
    {
      type: 'ContactLeftAudience',
      data: { contactId: c.contactId, email: c.email, audienceId: cmd.audienceId, leftAt: cmd.now },
    },
  ];
}

/** `lastSeenAt` only moves forward; a missing contact is not an error (the activity stands alone). */
export function decideTouchContact(state: ContactState, cmd: { seenAt: string }): ContactEvent[] {
  const c = state.contact;
  if (!c) return [];
  if (c.lastSeenAt !== null && Date.parse(c.lastSeenAt) >= Date.parse(cmd.seenAt)) return [];
  return [{ type: 'ContactSeen', data: { contactId: c.contactId, email: c.email, seenAt: cmd.seenAt } }];
}
