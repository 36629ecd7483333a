import { normaliseAddress } from '../../domain/suppressions/events.ts';
import { decideRejoin, decideRemoveUnsubscribe, decideUnsubscribe } from '../../domain/unsubscribes/decide.ts';
import { unsubscribeStream, type UnsubscribeSource } from '../../domain/unsubscribes/events.ts';
import { unsubscribeAggregate } from '../../domain/unsubscribes/state.ts';
import { execute, type Actor, type CommandContext } from '../execute.ts';
import { newId } from '../ids.ts';

export interface UnsubscribeInput {
  email: string;
  /** The contact the address is, when the caller found one. */
  contactId: string | null;
  /** Null: everything the workspace sends in numbers. */
  audienceId: string | null;
  source: UnsubscribeSource;
  /** The message whose link it came through (template analytics count it against that send). */
  emailId?: string | null;
}

/** The recipient of a public link acts for nobody of the workspace. */
export const recipientActor = (partition: string): Actor => ({ workspaceId: partition, kind: 'system', id: null });

/** Records an unsubscribe, or finds the scope left already; answers the entry that holds. */
export async function unsubscribe(ctx: CommandContext, actor: Actor, input: UnsubscribeInput, now: string) {
  const email = normaliseAddress(input.email);
  const { state, events } = await execute(
    ctx,
    actor,
    unsubscribeStream(actor.workspaceId, email),
    unsubscribeAggregate,
    (s) => decideUnsubscribe(s, { unsubscribeId: newId.unsubscribe(), ...input, email, now }),
  );
  return { created: events.length > 0, entry: state.entries[input.audienceId ?? '*']! };
}

/** The recipient rejoins a scope from the preferences page. */
export async function rejoin(
  ctx: CommandContext,
  actor: Actor,
  input: { email: string; audienceId: string | null },
  now: string,
) {
  await execute(ctx, actor, unsubscribeStream(actor.workspaceId, input.email), unsubscribeAggregate, (s) =>
    decideRejoin(s, { audienceId: input.audienceId, now }),
  );
}

/** The workspace removes an unsubscribe it recorded (409 `unsubscribe_not_removable` for the recipient's own). */
export async function removeUnsubscribe(
  ctx: CommandContext,
  actor: Actor,
  input: { unsubscribeId: string; email: string },
  now: string,
) {
  await execute(ctx, actor, unsubscribeStream(actor.workspaceId, input.email), unsubscribeAggregate, (s) =>
    decideRemoveUnsubscribe(s, { unsubscribeId: input.unsubscribeId, now }),
  );
}
