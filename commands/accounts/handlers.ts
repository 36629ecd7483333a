import { decideOpenAccount } from '../../domain/accounts/decide.ts';
import { accountStream } from '../../domain/accounts/events.ts';
import { accountAggregate } from '../../domain/accounts/state.ts';
import { execute, type Actor, type CommandContext } from '../execute.ts';
import { newId } from '../ids.ts';

/** The account of `email`: the one it has, or a new one. Concurrent calls for one email get one account. */
export async function openAccount(ctx: CommandContext, actor: Actor, email: string, now: string): Promise<string> {
  const userId = newId.user();
  const { state } = await execute(
    ctx,
    actor,
    accountStream(email),
    accountAggregate,
    (s) => decideOpenAccount(s, { userId, email, now }),
    { likelyNew: true },
  );
  return state.userId ?? userId;
}
