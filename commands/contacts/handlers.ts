import { audienceOr404 } from '../../domain/audiences/decide.ts';
import {
  decideCreateContact,
  decideDeleteContact,
  decideJoinAudience,
  decideLeaveAudience,
  decideTouchContact,
  decideUpdateContact,
  type UpdateContact,
} from '../../domain/contacts/decide.ts';
import { contactStream, normaliseEmail, type ContactEvent, type ContactSource } from '../../domain/contacts/events.ts';
import { contactAggregate, type Contact, type ContactState } from '../../domain/contacts/state.ts';
import { fail } from '../../domain/shared/errors.ts';
import { ensureDefaultAudience, loadAudiences } from '../audiences/handlers.ts';
import type { AudiencesState } from '../../domain/audiences/state.ts';
import { execute, executeNew, type Actor, type CommandContext, type NewStreamCommand } from '../execute.ts';
import { newId } from '../ids.ts';

export interface CreateContactInput {
  email: string;
  name?: string | null;
  notes?: string | null;
  attributes?: Record<string, string>;
  /** Audiences to join besides the default one; each must exist (404 `audience_not_found`, `param` `audienceIds.<i>`). */
  audienceIds?: string[];
  source: ContactSource;
}

/**
 * Puts an address in the book, in the default audience (made on first use) and the audiences
 * named. An address already in the book answers `created: false` with its contact id and writes
 * nothing: the API turns that into 409 `contact_exists`; contact events use the id. The address's
 * own stream decides, so of N concurrent creates exactly one writes.
 */
export async function createContact(
  ctx: CommandContext,
  actor: Actor,
  input: CreateContactInput,
  now: string,
  bulk: {
    /** The workspace's audiences with the default one made (`ensureDefaultAudience`), read once for many creates. */
    audiences?: AudiencesState;
    /** Most of the addresses are new to the book (an import): appended without reading their streams first. */
    likelyNew?: boolean;
  } = {},
): Promise<{ created: boolean; contactId: string }> {
  const audiences = bulk.audiences ?? (await ensureDefaultAudience(ctx, actor, now));
  const { streamId, decide } = createCommand(actor, input, now, audiences);
  const executed = await execute(ctx, actor, streamId, contactAggregate, decide, { likelyNew: bulk.likelyNew });
  return created(executed);
}

/**
 * `createContact` for many addresses, most of them new to the book (a page of an import), their
 * creations appended together (`executeNew`). Answers each one's outcome in their order, a refused
 * one as its error.
 */
export async function createContacts(
  ctx: CommandContext,
  actor: Actor,
  inputs: readonly CreateContactInput[],
  now: string,
  /** The workspace's audiences with the default one made (`ensureDefaultAudience`). */
  audiences: AudiencesState,
): Promise<PromiseSettledResult<{ created: boolean; contactId: string }>[]> {
  // An input refused before deciding (an audience not found) is that contact's outcome; the
  // others are executed together, and the outcomes answered in the inputs' order.
  const outcomes: PromiseSettledResult<{ created: boolean; contactId: string }>[] = [];
  const commands: NewStreamCommand<ContactState, ContactEvent>[] = [];
  const executedAt: number[] = [];
  for (const [i, input] of inputs.entries()) {
    try {
      commands.push(createCommand(actor, input, now, audiences));
      executedAt.push(i);
    } catch (reason) {
      outcomes[i] = { status: 'rejected', reason };
    }
  }
  const executed = await executeNew(ctx, actor, contactAggregate, commands);
  for (const [j, r] of executed.entries())
    outcomes[executedAt[j]!] = r.status === 'fulfilled' ? { status: 'fulfilled', value: created(r.value) } : r;
  return outcomes;
}

function createCommand(
  actor: Actor,
  input: CreateContactInput,
  now: string,
  audiences: AudiencesState,
): NewStreamCommand<ContactState, ContactEvent> {
  const email = normaliseEmail(input.email);
  const asked = input.audienceIds ?? [];
  for (const [i, id] of asked.entries()) audienceOr404(audiences, id, `audienceIds.${i}`);
  const contactId = newId.contact();
  return {
    streamId: contactStream(actor.workspaceId, email),
    decide: (s) =>
      decideCreateContact(s, {
        contactId,
        email,
        name: input.name ?? null,
        notes: input.notes ?? null,
        attributes: input.attributes ?? {},
        source: input.source,
        audienceIds: [audiences.defaultId!, ...asked],
        now,
      }),
  };
}

/** An address already in the book writes nothing: `created: false`, with its contact id. */
const created = ({ state, events }: { state: ContactState; events: unknown[] }) => ({
  created: events.length > 0,
  contactId: state.contact!.contactId,
});

export async function updateContact(
  ctx: CommandContext,
  actor: Actor,
  email: string,
  patch: Omit<UpdateContact, 'now'>,
  now: string,
): Promise<Contact> {
  const { state } = await execute(ctx, actor, contactStream(actor.workspaceId, email), contactAggregate, (s) =>
    decideUpdateContact(s, { ...patch, now }),
  );
  return state.contact!;
}

export async function deleteContact(ctx: CommandContext, actor: Actor, email: string, now: string): Promise<Contact> {
  let deleted: Contact | null = null;
  await execute(ctx, actor, contactStream(actor.workspaceId, email), contactAggregate, (s) => {
    deleted = s.contact;
    return decideDeleteContact(s, { now });
  });
  return deleted!;
}

/** Adds a contact to an audience; one it is in already stays (no event). */
export async function addToAudience(
  ctx: CommandContext,
  actor: Actor,
  input: { email: string; audienceId: string },
  now: string,
): Promise<{ changed: boolean; contact: Contact }> {
  audienceOr404(await loadAudiences(ctx, actor.workspaceId), input.audienceId);
  const { state, events } = await execute(
    ctx,
    actor,
    contactStream(actor.workspaceId, input.email),
    contactAggregate,
    (s) => decideJoinAudience(s, { audienceId: input.audienceId, now }),
  );
  return { changed: events.length > 0, contact: state.contact! };
}

/** Takes a contact out of an audience (not the default one: 409 `builtin_audience`). */
export async function removeFromAudience(
  ctx: CommandContext,
  actor: Actor,
  input: { email: string; audienceId: string },
  now: string,
): Promise<{ changed: boolean; contact: Contact }> {
  const audience = audienceOr404(await loadAudiences(ctx, actor.workspaceId), input.audienceId);
  if (audience.builtin !== null)
    fail('builtin_audience', 'The default audience holds every contact; delete the contact to take it out.', 'id');
  const { state, events } = await execute(
    ctx,
    actor,
    contactStream(actor.workspaceId, input.email),
    contactAggregate,
    (s) => decideLeaveAudience(s, { audienceId: input.audienceId, now }),
  );
  return { changed: events.length > 0, contact: state.contact! };
}

/**
 * Activity of a contact at `seenAt` (mail to or from it, a contact event about it): `lastSeenAt`
 * moves forward, never back. An address not in the book is left alone.
 */
export async function touchContact(ctx: CommandContext, actor: Actor, email: string, seenAt: string): Promise<void> {
  await execute(ctx, actor, contactStream(actor.workspaceId, normaliseEmail(email)), contactAggregate, (s) =>
    decideTouchContact(s, { seenAt }),
  );
}
