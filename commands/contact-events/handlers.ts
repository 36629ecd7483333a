import {
  decideRecordContactEvents,
  keyAggregate,
  type Item,
  type Outcome,
} from '../../domain/contact-events/decide.ts';
import { contactEventsStream } from '../../domain/contact-events/events.ts';
import { appendDecided, execute, loadState, type Actor, type CommandContext } from '../execute.ts';

/**
 * Stores the events of one request in one append: to the Idempotency-Key's stream (read first, so
 * positions already stored replay or conflict) or to a fresh stream of the request. Two requests
 * with one key race on the stream's expected revision; the loser decides again on what the winner
 * stored, so it replays instead of storing twice. Returns once the read models and the enrolment
 * process have passed the append.
 */
export async function recordContactEvents(
  ctx: CommandContext,
  actor: Actor,
  input: { streamSuffix: string; fresh: boolean; items: Item[] },
): Promise<Outcome[]> {
  if (input.fresh) return recordFresh(ctx, actor, input.streamSuffix, input.items);
  let outcomes: Outcome[] = [];
  await execute(ctx, actor, contactEventsStream(actor.workspaceId, input.streamSuffix), keyAggregate, (state) => {
    const decided = decideRecordContactEvents(state, input.items);
    outcomes = decided.outcomes;
    return decided.events;
  });
  return outcomes;
}

/**
 * How many of `items` the request would store now: positions its key already holds replay or
 * conflict, refused items store nothing. What the contact-event rate limit counts.
 */
export async function countNewContactEvents(
  ctx: CommandContext,
  actor: Actor,
  input: { streamSuffix: string; fresh: boolean; items: Item[] },
): Promise<number> {
  const state = input.fresh
    ? keyAggregate.initialState
    : (await loadState(ctx, contactEventsStream(actor.workspaceId, input.streamSuffix), keyAggregate)).state;
  return decideRecordContactEvents(state, input.items).outcomes.filter((o) => o.kind === 'stored').length;
}

/** A request without a key writes a stream no one else can name: nothing to read first, "no stream" expected. */
async function recordFresh(ctx: CommandContext, actor: Actor, streamSuffix: string, items: Item[]): Promise<Outcome[]> {
  const { events, outcomes } = decideRecordContactEvents(keyAggregate.initialState, items);
  if (events.length > 0)
    await appendDecided(ctx, actor, contactEventsStream(actor.workspaceId, streamSuffix), events, 'no_stream');
  return outcomes;
}
