import { partitionOf } from '../domain/shared/partitions.ts';
import type { Credential } from './credential.ts';
import { ApiError } from './errors/api-error.ts';

/** Test mode: a resource of `partitioned` data, or configuration both modes `shared`. */
export type Modes = 'partitioned' | 'shared';

/**
 * A partitioned resource (domain/shared/partitions.ts) holds data that sends and events act on:
 * its handlers see the credential's partition as the workspace id. Declared per resource
 * (api/route.ts), so an operation added to one cannot forget it.
 */
export const modeDoc = (modes: Modes): string | null =>
  modes === 'partitioned'
    ? 'Partitioned by mode: a test key reads and changes only test-mode data, a live key only live data.'
    : null;

/**
 * The credential a handler works with. On a partitioned route, its workspace id is the partition
 * of its mode. Elsewhere is configuration both modes share (roles, keys, templates, …): a test key
 * reads it but changes it only where the operation keeps it to test-mode objects itself or changes
 * nothing (`openToTestKeys`), so nothing a test key does reaches live sending.
 */
export function modeView(
  credential: Credential,
  partitioned: boolean,
  operation: { method: string; openToTestKeys?: boolean },
): Credential {
  if (partitioned) return { ...credential, workspaceId: partitionOf(credential.workspaceId, credential.mode) };
  if (credential.mode === 'test' && operation.method !== 'GET' && !operation.openToTestKeys) {
    throw new ApiError(
      'beyond_caller_authority',
      'A test key changes only test-mode data; this is configuration live mode shares. Use a live key.',
      null,
      403,
    );
  }
  return credential;
}
