// Preloaded by `npm test` through NODE_OPTIONS, which Node runs before the `--import` tap adds to
// every test process. tap then registers @tapjs/processinfo's module loader, which records each
// loaded file for coverage and `tap --changed`; we use neither. On Node 20 a registered loader runs
// on its own thread and every import crosses to it: importing kysely took 0.12 s without it and
// 0.5 s with it, and a test file 1.5 s more CPU (docs/decisions/tooling.md). tap's own bookkeeping
// (getProcessInfo) still runs; only that one registration is skipped, so tsx, which a .ts entry
// registers, is untouched.
import module from 'node:module';

const register = module.register;
module.register = function (specifier, ...rest) {
  if (String(specifier).includes('@tapjs/processinfo')) return;
  return register.call(this, specifier, ...rest);
};
