// tap's node-arg (package.json). `npm test` runs the suite compiled into .build (its pretest), with
// no loader: tsx's hooks cost each test process seconds of CPU. A .ts entry (a file run on its own,
// `npx tap test/x.test.ts`, or a .ts helper a test forks) still gets tsx.
if (process.argv[1]?.endsWith('.ts')) await import('tsx');
