import type { Resource } from '../../route.ts';
import { keyOperations } from './operations.ts';

/** The workspace's API keys. Narrowed callers make and revoke only keys inside their own authority (domain/api-keys). */
export const keys: Resource = {
  tag: 'API keys',
  description: "The workspace's API keys.",
  modes: 'shared',
  narrowed: 'open',
  operations: keyOperations,
};
