import {
  decideCreateSignature,
  decideDeleteSignature,
  decideSetLegacySignature,
  decideSetSignatureDefaults,
  decideUpdateSignature,
} from '../../domain/signatures/decide.ts';
import { signaturesStream, type SignatureEvent } from '../../domain/signatures/events.ts';
import { signaturesAggregate, type SignaturesState } from '../../domain/signatures/state.ts';
import { execute, loadState, type Actor, type CommandContext } from '../execute.ts';
import { newId } from '../ids.ts';
import { signatureHtml } from './html.ts';

/** An address as signatures know it: its stream's owner (domain/signatures/events.ts) and the address shown. */
export interface SignatureOwner {
  owner: string;
  address: string;
}

const run = (ctx: CommandContext, actor: Actor, owner: string, decide: (s: SignaturesState) => SignatureEvent[]) =>
  execute(ctx, actor, signaturesStream(actor.workspaceId, owner), signaturesAggregate, decide);

export async function createSignature(
  ctx: CommandContext,
  actor: Actor,
  input: SignatureOwner & { name: string; html: string; isDefault?: boolean; isReplyDefault?: boolean },
  now: string,
) {
  const signatureId = newId.signature();
  const html = signatureHtml(input.html, ctx.sanitiseHtml);
  await run(ctx, actor, input.owner, (s) => decideCreateSignature(s, { ...input, signatureId, html, now }));
  return { signatureId };
}

export async function updateSignature(
  ctx: CommandContext,
  actor: Actor,
  input: {
    owner: string;
    signatureId: string;
    name?: string;
    html?: string;
    isDefault?: boolean;
    isReplyDefault?: boolean;
  },
  now: string,
) {
  const html = input.html === undefined ? undefined : signatureHtml(input.html, ctx.sanitiseHtml);
  await run(ctx, actor, input.owner, (s) => decideUpdateSignature(s, { ...input, html, now }));
}

export async function setSignatureDefaults(
  ctx: CommandContext,
  actor: Actor,
  input: { owner: string; defaultId?: string | null; replyDefaultId?: string | null },
  now: string,
) {
  const { state } = await run(ctx, actor, input.owner, (s) => decideSetSignatureDefaults(s, { ...input, now }));
  return { defaultId: state.defaultId, replyDefaultId: state.replyDefaultId };
}

export const deleteSignature = (
  ctx: CommandContext,
  actor: Actor,
  input: { owner: string; signatureId: string },
  now: string,
) => run(ctx, actor, input.owner, (s) => decideDeleteSignature(s, { ...input, now }));

/**
 * A copy of a signature (its name and html) on each target address. Every target is decided first
 * without writing (409 `signature_name_taken`, 422 `signature_limit_reached`, `param` the
 * target's), so a refusal copies nothing; then one append per target. Each copy follows the
 * defaults rule on its address (the first there becomes both defaults).
 */
export async function copySignature(
  ctx: CommandContext,
  actor: Actor,
  input: { name: string; html: string; targets: (SignatureOwner & { param: string })[] },
  now: string,
) {
  const copies = input.targets.map((target) => ({
    ...target,
    signatureId: newId.signature(),
    name: input.name,
    html: input.html,
    now,
  }));
  for (const copy of copies) {
    const { state } = await loadState(ctx, signaturesStream(actor.workspaceId, copy.owner), signaturesAggregate);
    decideCreateSignature(state, copy);
  }
  for (const copy of copies) await run(ctx, actor, copy.owner, (s) => decideCreateSignature(s, copy));
  return copies.map((c) => c.signatureId);
}

/** The legacy single-signature write; answers the id of the signature it wrote. */
export async function setLegacySignature(
  ctx: CommandContext,
  actor: Actor,
  input: SignatureOwner & { html: string },
  now: string,
) {
  const signatureId = newId.signature();
  const html = signatureHtml(input.html, ctx.sanitiseHtml);
  const { state } = await run(ctx, actor, input.owner, (s) =>
    decideSetLegacySignature(s, { ...input, signatureId, html, now }),
  );
  return { signatureId: state.defaultId ?? signatureId };
}
