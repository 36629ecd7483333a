import { decideRecord, keyAggregate, type Item, type Outcome } from '../../domain/contact-events/decide.ts';
import { contactEventsStream } from '../../domain/contact-events/events.ts';
import { execute, type Actor, type CommandContext } from '../execute.ts';

/**
 * Stores the events of one request in one append: to the Idempotency-Key's stream (read first, so
 * positions already stored replay or conflict) or to a fresh stream of the request. Two requests
 * with one key race on the stream's expected revision; the loser decides again on what the winner
 * stored, so it replays instead of storing twice. Returns once the read models and the enrolment
 * process have passed the append.
 */
export async function recordContactEvents(ctx: CommandContext, actor: Actor, input: { streamSuffix: string; items: Item[] }): Promise<Outcome[]> {
  let outcomes: Outcome[] = [];
  await execute(ctx, actor, contactEventsStream(actor.workspaceId, input.streamSuffix), keyAggregate, (state) => {
    const decided = decideRecord(state, input.items);
    outcomes = decided.outcomes;
    return decided.events;
  });
  return outcomes;
}
