import type { Mailbox, SettableLabel, ThreadEvent } from './events.ts';

export interface ThreadState {
  exists: boolean;
  deleted: boolean;
  mailbox: Mailbox | null;
  label: SettableLabel;
  unread: boolean;
  /** Custom labels on the thread (`lbl_` ids of its mailbox). */
  labels: ReadonlySet<string>;
  /** The Message-ID headers filed here: the same message delivered again is filed once. */
  headerIds: ReadonlySet<string>;
  /**
   * The sent emails filed here: filing one again changes nothing. Apart from `headerIds`, so mail a
   * mailbox sends to itself is filed both as sent and as received.
   */
  sentEmailIds: ReadonlySet<string>;
  /** The import keys (Message-ID and content hash) of the imported messages filed here. */
  importKeys: ReadonlySet<string>;
}

export const threadAggregate = {
  initialState: {
    exists: false,
    deleted: false,
    mailbox: null,
    label: 'inbox',
    unread: false,
    labels: new Set(),
    headerIds: new Set(),
    sentEmailIds: new Set(),
    importKeys: new Set(),
  } as ThreadState,
  evolve(state: ThreadState, event: ThreadEvent): ThreadState {
    switch (event.type) {
      case 'MessageReceived': {
        const id = event.data.summary.messageId;
        return {
          ...state,
          exists: true,
          mailbox: event.data.mailbox,
          label: event.data.label,
          unread: true,
          headerIds: id ? new Set([...state.headerIds, id]) : state.headerIds,
        };
      }
      case 'MessageSent':
        return {
          ...state,
          exists: true,
          mailbox: event.data.mailbox,
          label: event.data.label,
          sentEmailIds: new Set([...state.sentEmailIds, event.data.emailId]),
        };
      case 'MessageImported': {
        const id = event.data.summary.messageId;
        return {
          ...state,
          exists: true,
          mailbox: event.data.mailbox,
          label: event.data.label,
          unread: (state.exists && state.unread) || event.data.unread,
          headerIds: id ? new Set([...state.headerIds, id]) : state.headerIds,
          importKeys: new Set([...state.importKeys, event.data.importKey]),
        };
      }
      case 'SentEmailReplied':
        return state;
      case 'ThreadMarked':
        return { ...state, unread: event.data.unread };
      case 'ThreadMoved':
        return { ...state, label: event.data.to };
      case 'ThreadLabelsChanged': {
        const labels = new Set([...state.labels, ...event.data.added]);
        for (const id of event.data.removed) labels.delete(id);
        return { ...state, labels };
      }
      case 'ThreadDeleted':
        return { ...state, deleted: true };
    }
  },
};
