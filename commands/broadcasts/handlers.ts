import {
  BROADCAST_NAME_MAX,
  decideCancelBroadcast,
  decideCompleteBroadcast,
  decideCreateBroadcast,
  decideStartBroadcast,
} from '../../domain/broadcasts/decide.ts';
import { broadcastStream } from '../../domain/broadcasts/events.ts';
import { broadcastAggregate, type BroadcastState } from '../../domain/broadcasts/state.ts';
import { checkScheduledAt, parseMailbox, SUBJECT_MAX } from '../../domain/emails/rules.ts';
import { DomainError, fail } from '../../domain/shared/errors.ts';
import { workspaceOfPartition, type Mode } from '../../domain/shared/partitions.ts';
import {
  decideCloseTemplateUses,
  decideReleaseTemplateUse,
  decideReserveTemplateUse,
} from '../../domain/template-uses/decide.ts';
import { templateUsesStream } from '../../domain/template-uses/events.ts';
import { templateUsesAggregate } from '../../domain/template-uses/state.ts';
import { sendableVersion } from '../../domain/templates/decide.ts';
import type { SendContext } from '../emails/handlers.ts';
import { execute, loadState, type Actor, type CommandContext } from '../execute.ts';
import { newId } from '../ids.ts';
import { assertStreamOpen } from '../sending-streams/handlers.ts';

export interface CreateBroadcastInput {
  name?: string | null;
  from: string;
  /** A `tpl_` id or a slug. */
  templateId: string;
  subject?: string | null;
  /** Checked to be audiences of the partition by the caller (api: 404 `audience_not_found`). */
  audienceIds: string[];
  scheduledAt?: string;
}

/**
 * A reservation whose broadcast stream is still missing after this long was left by a create that
 * died between its two writes; younger ones may be a create under way.
 */
const ORPHAN_USE_MS = 10 * 60_000;

/**
 * Creates a broadcast, checked as a send is (`from` an enabled address of the workspace, the
 * template's published version, for live mail an open broadcast lane, the schedule), then reserves
 * the template's use (so deleting it is refused while the broadcast has not started) and appends
 * `BroadcastCreated`. The caller reaches every address: narrowed credentials never get here.
 */
export async function createBroadcast(
  ctx: SendContext,
  actor: Actor,
  mode: Mode,
  input: CreateBroadcastInput,
  now: Date,
): Promise<string> {
  const partition = actor.workspaceId;
  const workspaceId = workspaceOfPartition(partition);
  const at = now.toISOString();
  const { lookups } = ctx.sending;
  const name = input.name?.trim() || null;
  if (name !== null && name.length > BROADCAST_NAME_MAX)
    fail('invalid_parameter', `At most ${BROADCAST_NAME_MAX} characters.`, 'name');
  const subject = input.subject?.replace(/[\r\n]+/g, ' ').trim() || null;
  if (subject !== null && subject.length > SUBJECT_MAX)
    fail('invalid_parameter', `At most ${SUBJECT_MAX} characters.`, 'subject');
  const mailbox = parseMailbox(input.from);
  if (!mailbox) fail('invalid_email_address', `${JSON.stringify(input.from)} is not an email address.`, 'from');
  const scheduledAt = checkScheduledAt(input.scheduledAt, at);
  const address = await lookups.address(workspaceId, mailbox.email.toLowerCase());
  if (!address)
    fail('from_address_forbidden', `${mailbox.email.toLowerCase()} is not an address of this workspace.`, 'from');
  if (!address.enabled) fail('address_disabled', `${address.address} is disabled; enable it to send from it.`, 'from');
  const template = await lookups.template(workspaceId, input.templateId);
  if (!template) fail('template_not_found', 'No template of the workspace has this id or slug.', 'templateId');
  try {
    sendableVersion(template);
  } catch (error) {
    if (error instanceof DomainError) throw new DomainError(error.code, error.message, 'templateId');
    throw error;
  }
  if (mode === 'live') await assertStreamOpen(ctx.commands, workspaceId, 'broadcast');

  const broadcastId = newId.broadcast();
  await execute(ctx.commands, actor, templateUsesStream(workspaceId, template.id), templateUsesAggregate, (s) =>
    decideReserveTemplateUse(s, { templateId: template.id, partition, broadcastId, now: at }),
  );
  await execute(
    ctx.commands,
    actor,
    broadcastStream(partition, broadcastId),
    broadcastAggregate,
    (s) =>
      decideCreateBroadcast(s, {
        broadcastId,
        name,
        from: input.from.trim(),
        templateId: template.id,
        subject,
        audienceIds: [...new Set(input.audienceIds)],
        scheduledAt,
        createdAt: at,
      }),
    { likelyNew: true },
  );
  return broadcastId;
}

/** Before its start only (409 `email_not_cancellable`); frees the template for deletion. */
export async function cancelBroadcast(ctx: CommandContext, actor: Actor, broadcastId: string, now: string) {
  const { state } = await execute(
    ctx,
    actor,
    broadcastStream(actor.workspaceId, broadcastId),
    broadcastAggregate,
    (s) => decideCancelBroadcast(s, { now }),
  );
  await releaseTemplateUse(ctx, actor, state, now);
}

/** The process's start: answers the state after it (`sending`, or `cancelled` when a cancel won). */
export async function startBroadcast(
  ctx: CommandContext,
  actor: Actor,
  broadcastId: string,
  recipients: number,
  now: string,
): Promise<BroadcastState> {
  const { state } = await execute(
    ctx,
    actor,
    broadcastStream(actor.workspaceId, broadcastId),
    broadcastAggregate,
    (s) => decideStartBroadcast(s, { recipients, now }),
  );
  await releaseTemplateUse(ctx, actor, state, now);
  return state;
}

export async function completeBroadcast(
  ctx: CommandContext,
  actor: Actor,
  broadcastId: string,
  counts: { accepted: number; refused: number },
  now: string,
): Promise<void> {
  await execute(ctx, actor, broadcastStream(actor.workspaceId, broadcastId), broadcastAggregate, (s) =>
    decideCompleteBroadcast(s, { ...counts, now }),
  );
}

export const loadBroadcast = (ctx: CommandContext, partition: string, broadcastId: string) =>
  loadState(ctx, broadcastStream(partition, broadcastId), broadcastAggregate);

/** A started or cancelled broadcast no longer holds its template. */
async function releaseTemplateUse(ctx: CommandContext, actor: Actor, state: BroadcastState, now: string) {
  if (!state.created || state.status === 'scheduled') return;
  const { templateId, broadcastId } = state.created;
  await execute(
    ctx,
    actor,
    templateUsesStream(workspaceOfPartition(actor.workspaceId), templateId),
    templateUsesAggregate,
    (s) => decideReleaseTemplateUse(s, { templateId, broadcastId, now }),
  );
}

/**
 * Closes a template to broadcasts before it is deleted (commands/templates `deleteTemplate`):
 * 409 `template_in_use` while a broadcast not yet started holds it. A use whose broadcast started
 * or was cancelled without releasing it (a crash between the two writes), or whose broadcast was
 * never written, is released in the same append. The close and a create's reservation are
 * appended to one stream with the revision read: of a create and a delete racing, one loses.
 */
export async function closeTemplateUses(
  ctx: CommandContext,
  actor: Actor,
  templateId: string,
  now: string,
): Promise<void> {
  const stream = templateUsesStream(actor.workspaceId, templateId);
  const { state } = await loadState(ctx, stream, templateUsesAggregate);
  const stale: string[] = [];
  for (const use of state.uses.values()) {
    const { state: broadcast } = await loadBroadcast(ctx, use.partition, use.broadcastId);
    const orphan = broadcast.status === null && Date.parse(now) - Date.parse(use.reservedAt) > ORPHAN_USE_MS;
    if (orphan || (broadcast.status !== null && broadcast.status !== 'scheduled')) stale.push(use.broadcastId);
  }
  await execute(ctx, actor, stream, templateUsesAggregate, (s) =>
    decideCloseTemplateUses(s, { templateId, stale, now }),
  );
}
