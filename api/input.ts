import { ApiError } from './errors/api-error.ts';

/**
 * Containers (objects and arrays) a request may nest, the outermost counted. Far more than any
 * operation needs (a template document's eight block levels take 19), and far less than the depth
 * at which a recursive walk (zod's, JSON.stringify's) exhausts the stack.
 */
export const NESTING_MAX = 64;

/** NUL, which PostgreSQL stores in neither text nor jsonb, and UTF-16 halves that pair with nothing. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is what these find
const UNSTORABLE = /[\u0000\p{Cs}]/u;
// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is what these find
const UNSTORABLE_ALL = /[\u0000\p{Cs}]/gu;

const STRING_PROBLEM = 'holds a character that cannot be stored (NUL, or half of a UTF-16 surrogate pair)';

type Path = (string | number)[];

/**
 * The first string (value or field name) that cannot be stored, or the first container nested
 * past NESTING_MAX, in depth-first order. Iterative: no input can exhaust the stack here.
 */
export function inputProblem(input: unknown): { path: Path; message: string } | null {
  const stack: { value: unknown; path: Path; level: number }[] = [{ value: input, path: [], level: 1 }];
  while (stack.length > 0) {
    const { value, path, level } = stack.pop()!;
    if (typeof value === 'string') {
      if (UNSTORABLE.test(value)) return { path, message: STRING_PROBLEM };
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (level > NESTING_MAX) return { path, message: `nests deeper than ${NESTING_MAX} levels` };
    const entries: [string | number, unknown][] = Array.isArray(value)
      ? value.map((v, i) => [i, v])
      : Object.entries(value);
    for (const [key] of entries) {
      if (typeof key === 'string' && UNSTORABLE.test(key))
        return { path: [...path, key], message: `the field name ${STRING_PROBLEM}` };
    }
    for (let i = entries.length - 1; i >= 0; i--)
      stack.push({ value: entries[i]![1], path: [...path, entries[i]![0]], level: level + 1 });
  }
  return null;
}

/**
 * Refuses what no schema should see, before any schema walks it: 400 for a path parameter (the
 * URL names no resource), 422 `invalid_parameter` naming the field for the query and the body.
 */
export function refuseUnsafeInput(where: 'path' | 'query' | 'body', input: unknown): void {
  const problem = inputProblem(input);
  if (!problem) return;
  const param = problem.path.join('.') || null;
  const message = param ? `\`${param}\` ${problem.message}.` : `The ${where} ${problem.message}.`;
  if (where === 'path') throw new ApiError('invalid_request', message, param, 400);
  throw new ApiError('invalid_parameter', message, param, 422);
}

/** A header whose value cannot be stored (the request log keeps the User-Agent) is 400, naming it. */
export function refuseUnsafeHeaders(headers: Record<string, string | string[] | undefined>): void {
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    if ((Array.isArray(value) ? value : [value]).some((v) => UNSTORABLE.test(v))) {
      throw new ApiError('invalid_request', `The \`${name}\` header ${STRING_PROBLEM}.`, name, 400);
    }
  }
}

/** Telemetry keeps what it can of a refused request: each unstorable character becomes U+FFFD. */
export const storableText = (s: string) => s.replace(UNSTORABLE_ALL, '\ufffd');
