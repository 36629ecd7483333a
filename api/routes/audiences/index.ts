import type { Resource } from '../../route.ts';
import { audienceOperations } from './operations.ts';

/** Audiences: lists of contacts. Like the book, they belong to the whole workspace. */
export const audiences: Resource = {
  tag: 'Audiences',
  description: 'Lists of contacts. Every contact is in the default audience.',
  modes: 'partitioned',
  narrowed: 'refuse',
  operations: audienceOperations,
};
