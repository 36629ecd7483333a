import { fail } from '../shared/errors.ts';
import type { SignatureEvent } from './events.ts';
import type { SignaturesState, SignatureState } from './state.ts';

export const SIGNATURES_MAX = 50;
export const SIGNATURE_NAME_MAX = 80;
export const SIGNATURE_HTML_MAX = 150_000;
/** What an address that only ever had the legacy single signature lists it as. */
export const LEGACY_SIGNATURE_NAME = 'Signature';

/** Names compare without case, as the spec's uniqueness does. */
const key = (name: string) => name.toLowerCase();

function signatureOf(state: SignaturesState, signatureId: string): SignatureState {
  const s = state.signatures.get(signatureId);
  if (!s) fail('resource_not_found', 'No such signature.', 'id');
  return s;
}

function nameFree(state: SignaturesState, name: string, except: string | null, param: string): void {
  for (const s of state.signatures.values())
    if (s.signatureId !== except && key(s.name) === key(name))
      fail('signature_name_taken', `The address has a signature named ${JSON.stringify(s.name)} already.`, param);
}

/** The defaults event when the holders differ from the state's, else nothing. */
function defaultsChange(
  state: SignaturesState,
  owner: string,
  defaultId: string | null,
  replyDefaultId: string | null,
  now: string,
): SignatureEvent[] {
  if (defaultId === state.defaultId && replyDefaultId === state.replyDefaultId) return [];
  return [{ type: 'SignatureDefaultsChanged', data: { owner, defaultId, replyDefaultId, changedAt: now } }];
}

/**
 * A new signature. The address's first becomes default for new mail and for replies unless
 * `isDefault` or `isReplyDefault` is sent false; a later one takes a default's place only when
 * asked. Refused: a name the address has (409 `signature_name_taken`, ignoring case), a 51st (422
 * `signature_limit_reached`). `param` prefixes the fields' names (a copy names its target).
 */
export function decideCreateSignature(
  state: SignaturesState,
  cmd: {
    signatureId: string;
    owner: string;
    address: string;
    name: string;
    html: string;
    isDefault?: boolean;
    isReplyDefault?: boolean;
    now: string;
    param?: string;
  },
): SignatureEvent[] {
  if (state.signatures.has(cmd.signatureId)) return [];
  nameFree(state, cmd.name, null, cmd.param ?? 'name');
  if (state.signatures.size >= SIGNATURES_MAX)
    fail('signature_limit_reached', `An address has at most ${SIGNATURES_MAX} signatures.`, cmd.param ?? null);
  const first = state.signatures.size === 0;
  return [
    {
      type: 'SignatureCreated',
      data: {
        signatureId: cmd.signatureId,
        owner: cmd.owner,
        address: cmd.address,
        name: cmd.name,
        html: cmd.html,
        isDefault: cmd.isDefault ?? first,
        isReplyDefault: cmd.isReplyDefault ?? first,
        createdAt: cmd.now,
      },
    },
  ];
}

/**
 * Name, html and the two flags; omitted ones stay. `isDefault: true` takes the place from the
 * holder; `false` on the holder leaves the address without that default.
 */
export function decideUpdateSignature(
  state: SignaturesState,
  cmd: {
    signatureId: string;
    owner: string;
    name?: string;
    html?: string;
    isDefault?: boolean;
    isReplyDefault?: boolean;
    now: string;
  },
): SignatureEvent[] {
  const s = signatureOf(state, cmd.signatureId);
  const name = cmd.name ?? s.name;
  const html = cmd.html ?? s.html;
  if (name !== s.name) nameFree(state, name, s.signatureId, 'name');
  const events: SignatureEvent[] =
    name === s.name && html === s.html
      ? []
      : [{ type: 'SignatureUpdated', data: { signatureId: s.signatureId, name, html, updatedAt: cmd.now } }];
  const flag = (asked: boolean | undefined, holder: string | null) =>
    asked === undefined ? holder : asked ? s.signatureId : holder === s.signatureId ? null : holder;
  return [
    ...events,
    ...defaultsChange(
      state,
      cmd.owner,
      flag(cmd.isDefault, state.defaultId),
      flag(cmd.isReplyDefault, state.replyDefaultId),
      cmd.now,
    ),
  ];
}

/** Sets either default to a signature of the address, or to none (null); omitted ones stay. */
export function decideSetSignatureDefaults(
  state: SignaturesState,
  cmd: { owner: string; defaultId?: string | null; replyDefaultId?: string | null; now: string },
): SignatureEvent[] {
  for (const [param, id] of [
    ['defaultId', cmd.defaultId],
    ['replyDefaultId', cmd.replyDefaultId],
  ] as const) {
    if (id != null && !state.signatures.has(id))
      fail('resource_not_found', 'No such signature of this address.', param);
  }
  return defaultsChange(
    state,
    cmd.owner,
    cmd.defaultId === undefined ? state.defaultId : cmd.defaultId,
    cmd.replyDefaultId === undefined ? state.replyDefaultId : cmd.replyDefaultId,
    cmd.now,
  );
}

/** A deleted default leaves the address without that default: nothing takes its place. */
export function decideDeleteSignature(
  state: SignaturesState,
  cmd: { signatureId: string; owner: string; now: string },
): SignatureEvent[] {
  const s = signatureOf(state, cmd.signatureId);
  return [{ type: 'SignatureDeleted', data: { signatureId: s.signatureId, owner: cmd.owner, deletedAt: cmd.now } }];
}

/**
 * The legacy single-signature write ("the address's signature"): the html of the signature that
 * signs new mail; with none, a new one named `Signature` takes that place (default for both when
 * it is the address's first, as an address that only ever had a legacy signature lists it).
 */
export function decideSetLegacySignature(
  state: SignaturesState,
  cmd: { signatureId: string; owner: string; address: string; html: string; now: string },
): SignatureEvent[] {
  if (state.defaultId !== null)
    return decideUpdateSignature(state, {
      signatureId: state.defaultId,
      owner: cmd.owner,
      html: cmd.html,
      now: cmd.now,
    });
  const named = [...state.signatures.values()].find((s) => key(s.name) === key(LEGACY_SIGNATURE_NAME));
  if (named)
    return decideUpdateSignature(state, {
      signatureId: named.signatureId,
      owner: cmd.owner,
      html: cmd.html,
      isDefault: true,
      now: cmd.now,
    });
  return decideCreateSignature(state, {
    signatureId: cmd.signatureId,
    owner: cmd.owner,
    address: cmd.address,
    name: LEGACY_SIGNATURE_NAME,
    html: cmd.html,
    isDefault: true,
    now: cmd.now,
  });
}
