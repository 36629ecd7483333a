import { runCli } from './run.ts';

// Exit explicitly: pools and timers left behind by a failed command must not keep the CLI alive.
process.exit(await runCli(process.argv.slice(2), { out: console.log, err: console.error }));
