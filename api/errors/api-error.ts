import { CATALOGUE, TYPE_BY_STATUS } from './catalogue.ts';

/** An error the api answers with; status and type come from the catalogue unless given. */
export class ApiError extends Error {
  readonly status: number;
  readonly type: string;
  constructor(
    readonly code: string,
    message: string,
    readonly param: string | null = null,
    status?: number,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.status = status ?? CATALOGUE[code]?.[0] ?? 500;
    this.type = TYPE_BY_STATUS[this.status] ?? 'api_error';
  }
}

export interface ErrorBody {
  error: { type: string; code: string; message: string; param: string | null; docUrl: string; requestId: string };
}
