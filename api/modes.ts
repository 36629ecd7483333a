import type { FastifyInstance } from 'fastify';
import { partitionOf } from '../domain/shared/partitions.ts';
import type { Credential } from './credential.ts';
import { ApiError } from './errors/api-error.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set on every route registered in a scope given to `partitionByMode`. */
    partitioned?: boolean;
  }
}

const PARTITIONED = 'Partitioned by mode: a test key reads and changes only test-mode data, a live key only live data.';

/**
 * Every route registered in this scope serves a mode-partitioned resource
 * (domain/shared/partitions.ts): its handler sees the credential's partition as the workspace id.
 * Declared per scope, not per route, so a route added to such a slice cannot forget it.
 */
export function partitionByMode(scope: FastifyInstance): void {
  scope.addHook('onRoute', (options) => {
    options.config = { ...options.config, partitioned: true };
    // A GET and its HEAD share one schema object: say it once.
    const schema = (options.schema ??= {}) as { description?: string };
    if (!schema.description?.endsWith(PARTITIONED)) schema.description = `${schema.description ?? ''} ${PARTITIONED}`.trim();
  });
}

/**
 * The credential a handler works with. On a partitioned route, its workspace id is the partition
 * of its mode. Elsewhere is configuration both modes share (roles, keys, templates, …): a test key
 * reads it but changes it only where the operation keeps it to test-mode objects itself or changes
 * nothing (`openToTestKeys`), so nothing a test key does reaches live sending.
 */
export function modeView(credential: Credential, partitioned: boolean, operation: { method: string; openToTestKeys?: boolean }): Credential {
  if (partitioned) return { ...credential, workspaceId: partitionOf(credential.workspaceId, credential.mode) };
  if (credential.mode === 'test' && operation.method !== 'GET' && !operation.openToTestKeys) {
    throw new ApiError('beyond_caller_authority', 'A test key changes only test-mode data; this is configuration live mode shares. Use a live key.', null, 403);
  }
  return credential;
}
