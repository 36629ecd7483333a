import type { SignatureEvent } from './events.ts';

export interface SignatureState {
  signatureId: string;
  name: string;
  html: string;
}

export interface SignaturesState {
  /** In creation order. */
  signatures: Map<string, SignatureState>;
  defaultId: string | null;
  replyDefaultId: string | null;
}

export const signaturesAggregate = {
  initialState: { signatures: new Map(), defaultId: null, replyDefaultId: null } as SignaturesState,
  evolve(state: SignaturesState, event: SignatureEvent): SignaturesState {
    switch (event.type) {
      case 'SignatureCreated': {
        const d = event.data;
        return {
          signatures: new Map(state.signatures).set(d.signatureId, {
            signatureId: d.signatureId,
            name: d.name,
            html: d.html,
          }),
          defaultId: d.isDefault ? d.signatureId : state.defaultId,
          replyDefaultId: d.isReplyDefault ? d.signatureId : state.replyDefaultId,
        };
      }
      case 'SignatureUpdated': {
        const current = state.signatures.get(event.data.signatureId);
        if (!current) return state;
        const { name, html } = event.data;
        return { ...state, signatures: new Map(state.signatures).set(current.signatureId, { ...current, name, html }) };
      }
      case 'SignatureDefaultsChanged':
        return { ...state, defaultId: event.data.defaultId, replyDefaultId: event.data.replyDefaultId };
      case 'SignatureDeleted': {
        const signatures = new Map(state.signatures);
        signatures.delete(event.data.signatureId);
        const id = event.data.signatureId;
        return {
          signatures,
          defaultId: state.defaultId === id ? null : state.defaultId,
          replyDefaultId: state.replyDefaultId === id ? null : state.replyDefaultId,
        };
      }
    }
  },
};
