import { z } from 'zod';
import { CATALOGUE, isErrorCode, TYPE_BY_STATUS } from './catalogue.ts';

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
    this.status = status ?? (isErrorCode(code) ? CATALOGUE[code][0] : 500);
    this.type = TYPE_BY_STATUS[this.status] ?? 'api_error';
  }
}

/** The envelope of every error answer; named `Error` among the OpenAPI components. */
export const errorEnvelope = z
  .object({
    error: z.object({
      type: z.string().describe('Fixed per status.'),
      code: z.string().describe('One row of /docs/errors; each operation lists the codes it answers with.'),
      message: z.string(),
      param: z.string().nullable().describe('The dotted path of the field at fault, or null.'),
      docUrl: z.string().describe('The row of /docs/errors for `code`.'),
      requestId: z.string(),
    }),
  })
  .meta({ id: 'Error', description: 'Every error answer: `{error:{type,code,message,param,docUrl,requestId}}`.' });

export type ErrorBody = z.infer<typeof errorEnvelope>;
