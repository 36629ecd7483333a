import {
  decideCancelProviderImport,
  decideFinishProviderImport,
  decideQueueProviderImport,
  decideRecordProviderImportProgress,
  decideStartProviderImport,
} from '../../domain/provider-imports/decide.ts';
import { providerImportSecretId, providerImportsStream } from '../../domain/provider-imports/events.ts';
import {
  IMPORT_RESOURCES,
  inImportOrder,
  type ImportReport,
  type ImportResource,
  type ProviderName,
} from '../../domain/provider-imports/providers.ts';
import { providerImportsAggregate, type ProviderImportsState } from '../../domain/provider-imports/state.ts';
import { DomainError } from '../../domain/shared/errors.ts';
import { ProviderError, type ProviderConnector } from '../../infra/providers/port.ts';
import type { SecretStore } from '../../infra/secrets/port.ts';
import { execute, loadState, type Actor, type CommandContext } from '../execute.ts';
import { newId } from '../ids.ts';

/** What provider imports reach outside: the providers' APIs and the vault the key waits in. */
export interface ProviderImportPorts {
  connect: ProviderConnector;
  secrets: SecretStore;
}

/** 503 `provider_unavailable`: the provider did not answer, or asked to wait; `Retry-After` when it said how long. */
class ProviderUnavailable extends DomainError {
  constructor(
    message: string,
    override readonly retryAfterSeconds: number,
  ) {
    super('provider_unavailable', message, null);
  }
}

/** A rate-limit answer this short is waited out in the request; a longer one is the caller's to wait. */
const INLINE_WAIT_MS = 5_000;

/** The provider's refusal of a key or its silence, as our error (the key is never in the message). */
export function asDomainError(error: unknown): DomainError {
  if (!(error instanceof ProviderError)) throw error;
  switch (error.kind) {
    case 'restricted':
      return new DomainError(
        'restricted_key',
        `${error.message}. Use a key that can read the account (full access).`,
        'apiKey',
      );
    case 'refused':
      return new DomainError('provider_key_refused', error.message, 'apiKey');
    case 'rate_limited':
      return new ProviderUnavailable(
        `${error.message}; try again later.`,
        Math.max(1, Math.ceil((error.retryAfterMs ?? 1000) / 1000)),
      );
    case 'unavailable':
      return new ProviderUnavailable(`${error.message}; try again later.`, 30);
    case 'failed':
      return new DomainError('provider_unavailable', error.message, null);
  }
}

/** One call to the provider, a short rate-limit wait taken in place once. */
async function once<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (
      error instanceof ProviderError &&
      error.kind === 'rate_limited' &&
      (error.retryAfterMs ?? 1000) <= INLINE_WAIT_MS
    ) {
      await new Promise((r) => setTimeout(r, error.retryAfterMs ?? 1000));
      return call();
    }
    throw error;
  }
}

export interface Inspection {
  provider: ProviderName;
  resources: ImportResource[];
  counts: Record<ImportResource, { count: number; more: boolean }>;
}

/**
 * What the provider holds for the key, a first page of each resource: nothing stored, the key
 * kept only for the length of the call. A send-only key is 400 `restricted_key`; a key the
 * provider refuses is 400 `provider_key_refused`.
 */
export async function inspectProvider(
  ports: ProviderImportPorts,
  provider: ProviderName,
  apiKey: string,
): Promise<Inspection> {
  const source = ports.connect(provider, apiKey);
  try {
    await once(() => source.check());
    const counts = {} as Inspection['counts'];
    for (const resource of IMPORT_RESOURCES) {
      counts[resource] = { count: 0, more: false };
      if (!source.offers.includes(resource)) continue;
      try {
        counts[resource] = await once(() => source.count(resource));
      } catch (error) {
        // One resource the key cannot read (a scope it lacks) is nothing to import, not a refusal of the key.
        if (!(error instanceof ProviderError) || error.kind !== 'failed') throw error;
      }
    }
    return { provider, resources: [...source.offers], counts };
  } catch (error) {
    throw asDomainError(error);
  }
}

export interface StartProviderImportInput {
  provider: ProviderName;
  apiKey: string;
  resources: ImportResource[];
}

/**
 * Checks the key with the provider, puts it in the vault and queues the import: one per
 * workspace (409 `already_running`, and then the key is erased again). The key is never in an event.
 */
export async function startProviderImport(
  ctx: CommandContext,
  ports: ProviderImportPorts,
  actor: Actor,
  input: StartProviderImportInput,
  now: string,
): Promise<string> {
  const source = ports.connect(input.provider, input.apiKey);
  const { state } = await loadState(ctx, providerImportsStream(actor.workspaceId), providerImportsAggregate);
  // Refused before the provider is asked: a second start should not spend the provider's rate limit.
  decideQueueProviderImport(state, { importId: '', provider: input.provider, resources: [], now });
  try {
    await once(() => source.check());
  } catch (error) {
    throw asDomainError(error);
  }
  const importId = newId.providerImport();
  const secretId = providerImportSecretId(importId);
  await ports.secrets.put(secretId, input.apiKey);
  try {
    await execute(ctx, actor, providerImportsStream(actor.workspaceId), providerImportsAggregate, (s) =>
      decideQueueProviderImport(s, {
        importId,
        provider: input.provider,
        resources: inImportOrder(input.resources),
        now,
      }),
    );
  } catch (error) {
    await ports.secrets.delete(secretId);
    throw error;
  }
  return importId;
}

/** Queued or running → cancelled, the key erased; a settled import is left as it is. */
export async function cancelProviderImport(
  ctx: CommandContext,
  ports: Pick<ProviderImportPorts, 'secrets'>,
  actor: Actor,
  importId: string,
  now: string,
): Promise<void> {
  await execute(ctx, actor, providerImportsStream(actor.workspaceId), providerImportsAggregate, (s) =>
    decideCancelProviderImport(s, { importId, now }),
  );
  await ports.secrets.delete(providerImportSecretId(importId));
}

const run = (
  ctx: CommandContext,
  actor: Actor,
  decide: (s: ProviderImportsState) => ReturnType<typeof decideStartProviderImport>,
) => execute(ctx, actor, providerImportsStream(actor.workspaceId), providerImportsAggregate, decide);

/** The process's first step; answers the import's status after it (`running`, or `cancelled` when a cancel won). */
export async function beginProviderImport(ctx: CommandContext, actor: Actor, importId: string, now: string) {
  const { state } = await run(ctx, actor, (s) => decideStartProviderImport(s, { importId, now }));
  return state.imports.get(importId) ?? null;
}

export const recordProviderImportProgress = (
  ctx: CommandContext,
  actor: Actor,
  importId: string,
  report: ImportReport,
  now: string,
) => run(ctx, actor, (s) => decideRecordProviderImportProgress(s, { importId, report, now }));

/**
 * Erases the import's key, then settles it (completed, or failed with `error`): whoever sees it
 * settled sees the key gone. A crash between the two finds the run at its end again, which
 * needs no key.
 */
export async function finishProviderImport(
  ctx: CommandContext,
  ports: Pick<ProviderImportPorts, 'secrets'>,
  actor: Actor,
  importId: string,
  outcome: { report: ImportReport; error: string | null },
  now: string,
): Promise<void> {
  await ports.secrets.delete(providerImportSecretId(importId));
  await run(ctx, actor, (s) => decideFinishProviderImport(s, { importId, ...outcome, now }));
}

export const loadProviderImports = (ctx: CommandContext, workspaceId: string) =>
  loadState(ctx, providerImportsStream(workspaceId), providerImportsAggregate).then((r) => r.state);
