import { DomainError, fail } from '../shared/errors.ts';
import {
  EXPORT_EVERY_MS,
  EXPORT_KEEP_DAYS,
  type ExportCounts,
  type ExportCreator,
  type ExportEvent,
  type ExportPhase,
} from './events.ts';
import { activeExport, type ExportsState, lastExportAt } from './state.ts';

/** 429 `export_limit_reached`, with the seconds until the next export may start (Retry-After). */
export class ExportLimitReached extends DomainError {
  constructor(
    message: string,
    override readonly retryAfterSeconds: number,
  ) {
    super('export_limit_reached', message, null);
  }
}

/** When the next export may start: a day after the last that did not fail (now when there is none). */
export function nextExportAt(state: ExportsState, now: string): string {
  const last = lastExportAt(state);
  if (last === null) return now;
  const next = new Date(Date.parse(last) + EXPORT_EVERY_MS).toISOString();
  return next > now ? next : now;
}

/**
 * A new export, `queued`. One queued or running is 409 `already_running`; one asked for less than
 * a day ago (that did not fail) is 429 `export_limit_reached`.
 */
export function decideRequestExport(
  state: ExportsState,
  cmd: { exportId: string; createdBy: ExportCreator; now: string },
): ExportEvent[] {
  if (state.exports.has(cmd.exportId)) return [];
  const active = activeExport(state);
  if (active) fail('already_running', `The export ${active} is under way; wait for it to be ready.`, null);
  const next = nextExportAt(state, cmd.now);
  if (next > cmd.now)
    throw new ExportLimitReached(
      `The workspace exports once a day; the next export can start at ${next}.`,
      Math.max(1, Math.ceil((Date.parse(next) - Date.parse(cmd.now)) / 1000)),
    );
  return [{ type: 'ExportRequested', data: { exportId: cmd.exportId, createdBy: cmd.createdBy, createdAt: cmd.now } }];
}

/**
 * An attempt at writing the zip begins: the first, or a new one after a process died mid-way
 * (the export is then running already). Only a queued or running export starts.
 */
export function decideStartExport(
  state: ExportsState,
  cmd: { exportId: string; attempt: number; threadsTotal: number; now: string },
): ExportEvent[] {
  const found = state.exports.get(cmd.exportId);
  if (!found || (found.status !== 'queued' && found.status !== 'running') || cmd.attempt <= found.attempt) return [];
  const { exportId, attempt, threadsTotal } = cmd;
  return [{ type: 'ExportStarted', data: { exportId, attempt, threadsTotal, startedAt: cmd.now } }];
}

const current = (state: ExportsState, exportId: string, attempt: number) => {
  const found = state.exports.get(exportId);
  return found?.status === 'running' && found.attempt === attempt;
};

/** Progress of the latest attempt only: an older attempt still running somewhere records nothing. */
export function decideRecordExportProgress(
  state: ExportsState,
  cmd: {
    exportId: string;
    attempt: number;
    phase: ExportPhase;
    threadsDone: number;
    threadsTotal: number;
    now: string;
  },
): ExportEvent[] {
  if (!current(state, cmd.exportId, cmd.attempt)) return [];
  const { exportId, attempt, phase, threadsDone, threadsTotal } = cmd;
  return [{ type: 'ExportProgressed', data: { exportId, attempt, phase, threadsDone, threadsTotal, at: cmd.now } }];
}

/** The zip of the latest attempt is stored: the export is `ready` for 365 days. */
export function decideCompleteExport(
  state: ExportsState,
  cmd: {
    exportId: string;
    attempt: number;
    file: { sha256: string; size: number };
    fileName: string;
    counts: ExportCounts;
    now: string;
  },
): ExportEvent[] {
  if (!current(state, cmd.exportId, cmd.attempt)) return [];
  const expiresAt = new Date(Date.parse(cmd.now) + EXPORT_KEEP_DAYS * 24 * 60 * 60 * 1000).toISOString();
  const { exportId, attempt, file, fileName, counts } = cmd;
  return [
    {
      type: 'ExportCompleted',
      data: { exportId, attempt, file, fileName, counts, finishedAt: cmd.now, expiresAt },
    },
  ];
}

export function decideFailExport(
  state: ExportsState,
  cmd: { exportId: string; error: string; now: string },
): ExportEvent[] {
  const status = state.exports.get(cmd.exportId)?.status;
  if (status !== 'queued' && status !== 'running') return [];
  return [{ type: 'ExportFailed', data: { exportId: cmd.exportId, error: cmd.error, failedAt: cmd.now } }];
}

/**
 * The retention process deleted the zip of a ready export, once. The process is the judge of the
 * expiry (its clock reads `expiresAt` off its own table), so an operator can end one early.
 */
export function decideRecordExportFileDeleted(
  state: ExportsState,
  cmd: { exportId: string; now: string },
): ExportEvent[] {
  if (state.exports.get(cmd.exportId)?.status !== 'ready') return [];
  return [{ type: 'ExportFileDeleted', data: { exportId: cmd.exportId, at: cmd.now } }];
}
