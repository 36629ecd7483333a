import path from 'node:path';

/**
 * `npm test` runs the suite compiled into .build/ (package.json "pretest"); a file run on its own
 * runs from source. Paths to the checkout's own files (fixtures, configuration) go through ROOT,
 * and modules a test forks through `runnable`, so both ways find them.
 */
const here = import.meta.dirname;
const COMPILED = import.meta.url.endsWith('.js');

/** The checkout's root. */
export const ROOT = path.resolve(here, COMPILED ? '../../..' : '../..');

/** A module of ours as this run runs it: `runnable('test/support/x')` is the compiled .js or the .ts. */
export function runnable(module: string): string {
  return COMPILED ? path.join(ROOT, '.build', `${module}.js`) : path.join(ROOT, `${module}.ts`);
}

/**
 * Node's arguments to run one of our entry points in a process of its own: the compiled .js under
 * `npm test`, the .ts through tsx when a file runs from source. A process loading the system
 * through tsx's hooks spends seconds more CPU than one loading it compiled.
 */
export function entryArgs(module: string): string[] {
  const file = runnable(module);
  return file.endsWith('.ts') ? ['--import=tsx', file] : [file];
}
