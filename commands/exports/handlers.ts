import {
  decideCompleteExport,
  decideFailExport,
  decideRecordExportFileDeleted,
  decideRecordExportProgress,
  decideRequestExport,
  decideStartExport,
} from '../../domain/exports/decide.ts';
import { type ExportCounts, type ExportCreator, type ExportPhase, exportsStream } from '../../domain/exports/events.ts';
import { exportsAggregate, type ExportsState } from '../../domain/exports/state.ts';
import { execute, type Actor, type CommandContext } from '../execute.ts';
import { newId } from '../ids.ts';

const run = (ctx: CommandContext, actor: Actor, decide: (s: ExportsState) => ReturnType<typeof decideStartExport>) =>
  execute(ctx, actor, exportsStream(actor.workspaceId), exportsAggregate, decide);

/** A new export of the workspace, queued; answers its id. */
export async function requestExport(
  ctx: CommandContext,
  actor: Actor,
  createdBy: ExportCreator,
  now: string,
): Promise<string> {
  const exportId = newId.export();
  await run(ctx, actor, (s) => decideRequestExport(s, { exportId, createdBy, now }));
  return exportId;
}

/** Attempt `attempt` begins writing the zip; false when the export is no longer to be made (or a later attempt took it). */
export async function startExport(
  ctx: CommandContext,
  actor: Actor,
  input: { exportId: string; attempt: number; threadsTotal: number },
  now: string,
): Promise<boolean> {
  const { state } = await run(ctx, actor, (s) => decideStartExport(s, { ...input, now }));
  const found = state.exports.get(input.exportId);
  return found?.status === 'running' && found.attempt === input.attempt;
}

export async function recordExportProgress(
  ctx: CommandContext,
  actor: Actor,
  input: { exportId: string; attempt: number; phase: ExportPhase; threadsDone: number; threadsTotal: number },
  now: string,
): Promise<void> {
  await run(ctx, actor, (s) => decideRecordExportProgress(s, { ...input, now }));
}

/** Records the stored zip and answers its expiry; null when this attempt is no longer the export's (its zip is then nobody's). */
export async function completeExport(
  ctx: CommandContext,
  actor: Actor,
  input: {
    exportId: string;
    attempt: number;
    file: { sha256: string; size: number };
    fileName: string;
    counts: ExportCounts;
  },
  now: string,
): Promise<string | null> {
  const { state } = await run(ctx, actor, (s) => decideCompleteExport(s, { ...input, now }));
  const found = state.exports.get(input.exportId);
  return found?.file?.sha256 === input.file.sha256 ? found.expiresAt : null;
}

export async function failExport(ctx: CommandContext, actor: Actor, exportId: string, error: string, now: string) {
  await run(ctx, actor, (s) => decideFailExport(s, { exportId, error, now }));
}

export async function recordExportFileDeleted(ctx: CommandContext, actor: Actor, exportId: string, now: string) {
  await run(ctx, actor, (s) => decideRecordExportFileDeleted(s, { exportId, now }));
}
