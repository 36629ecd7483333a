import type { ImportFile, MailboxImportEvent } from './events.ts';

export type MailboxImportStatus = 'uploading' | 'queued' | 'running' | 'completed' | 'failed' | 'cancelled';

export const SETTLED: readonly MailboxImportStatus[] = ['completed', 'failed', 'cancelled'];
const ACTIVE: readonly MailboxImportStatus[] = ['queued', 'running'];

export interface MailboxImportState {
  status: MailboxImportStatus;
  addressId: string | null;
  files: ImportFile[];
  uploadDeleted: boolean;
}

export interface MailboxImportsState {
  imports: Map<string, MailboxImportState>;
}

/** The import queued or running into `addressId`, if any. */
export const activeOn = (state: MailboxImportsState, addressId: string | null) =>
  [...state.imports.entries()].find(([, i]) => i.addressId === addressId && ACTIVE.includes(i.status))?.[0] ?? null;

export const mailboxImportsAggregate = {
  initialState: { imports: new Map() } as MailboxImportsState,
  evolve(state: MailboxImportsState, event: MailboxImportEvent): MailboxImportsState {
    const imports = new Map(state.imports);
    const { importId } = event.data;
    const current = imports.get(importId);
    const set = (change: Partial<MailboxImportState>) => {
      if (current) imports.set(importId, { ...current, ...change });
      return { imports };
    };
    switch (event.type) {
      case 'MailboxImportCreated':
        imports.set(importId, {
          status: 'uploading',
          addressId: event.data.mailbox.addressId,
          files: event.data.files,
          uploadDeleted: false,
        });
        return { imports };
      case 'MailboxImportQueued':
        return set({ status: 'queued' });
      case 'MailboxImportStarted':
        return set({ status: 'running' });
      case 'MailboxImportProgressed':
        return state;
      case 'MailboxImportCompleted':
        return set({ status: 'completed' });
      case 'MailboxImportFailed':
        return set({ status: 'failed' });
      case 'MailboxImportCancelled':
        return set({ status: 'cancelled' });
      case 'MailboxImportUploadDeleted':
        return set({ uploadDeleted: true });
    }
  },
};
