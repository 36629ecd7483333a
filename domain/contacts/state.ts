import type { ContactEvent, ContactSource } from './events.ts';

export interface Contact {
  contactId: string;
  email: string;
  name: string | null;
  notes: string | null;
  attributes: Record<string, string>;
  source: ContactSource;
  createdAt: string;
  updatedAt: string;
  lastSeenAt: string | null;
  /** Audiences the contact is in now (as this stream knows them; a deleted audience may linger). */
  audienceIds: string[];
}

/** The state of one address: the contact, or null when it is not in the book. */
export interface ContactState {
  contact: Contact | null;
}

export const contactAggregate = {
  initialState: { contact: null } as ContactState,
  evolve(state: ContactState, event: ContactEvent): ContactState {
    const c = state.contact;
    switch (event.type) {
      case 'ContactCreated': {
        const d = event.data;
        return {
          contact: {
            contactId: d.contactId,
            email: d.email,
            name: d.name,
            notes: d.notes,
            attributes: { ...d.attributes },
            source: d.source,
            createdAt: d.createdAt,
            updatedAt: d.createdAt,
            lastSeenAt: null,
            audienceIds: [...d.audienceIds],
          },
        };
      }
      case 'ContactUpdated':
        if (!c) return state;
        return {
          contact: {
            ...c,
            name: event.data.name,
            notes: event.data.notes,
            attributes: { ...event.data.attributes },
            updatedAt: event.data.updatedAt,
          },
        };
      case 'ContactDeleted':
        return { contact: null };
      case 'ContactJoinedAudience':
        if (!c || c.audienceIds.includes(event.data.audienceId)) return state;
        return { contact: { ...c, audienceIds: [...c.audienceIds, event.data.audienceId] } };
      case 'ContactLeftAudience':
        if (!c) return state;
        return { contact: { ...c, audienceIds: c.audienceIds.filter((a) => a !== event.data.audienceId) } };
      case 'ContactSeen':
        if (!c) return state;
        return { contact: { ...c, lastSeenAt: event.data.seenAt } };
    }
  },
};
