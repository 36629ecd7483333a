import { DomainError } from '../../domain/shared/errors.ts';

/** The DomainError a decider throws; fails the test when it decides instead of refusing. */
export function refusal(fn: () => unknown): DomainError {
  try {
    fn();
  } catch (error) {
    if (error instanceof DomainError) return error;
    throw error;
  }
  throw new Error('expected a refusal');
}
