/**
 * A rule of the domain said no. `code` is the spec's error code; the api maps it to a status and
 * type through one table (api/errors/catalogue.ts), so the domain never speaks HTTP.
 */
export class DomainError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly param: string | null = null,
  ) {
    super(message);
    this.name = 'DomainError';
  }

  /** Set by refusals that pass with time (the 429s): when to ask again, sent as `Retry-After`. */
  declare readonly retryAfterSeconds?: number;
}

export function fail(code: string, message: string, param: string | null = null): never {
  throw new DomainError(code, message, param);
}
