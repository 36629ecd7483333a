/**
 * One zip library writing the export benchmark's side archive to a sink that counts and drops the
 * bytes, in a process of its own so its RSS is its own. Forked by bench/export.ts with the
 * library and the entry counts; answers one `done` message. Each entry's content is a stream made
 * when the library asks for it (yazl, `addReadStreamLazy`, as processes/exports/archive.ts) or
 * handed over as a stream not yet read (archiver's `append`), so no library is given bytes ahead.
 *
 *   yazl             every entry declared, then `end` (as the export does)
 *   archiver         every entry appended, then `finalize` (archiver's README)
 *   archiver-paced   the next entry appended only once archiver took the one before (`entry`)
 *
 * Small entries are about 2 KB of JSON-like text; large ones `largeMb` MB of random bytes (a
 * pool of 4 MB read at moving offsets), both deflated.
 */
import crypto from 'node:crypto';
import { once } from 'node:events';
import { Readable, Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { ZipArchive } from 'archiver';
import { ZipFile } from 'yazl';

export type ZipLibrary = 'yazl' | 'archiver' | 'archiver-paced';
export interface ZipDone {
  type: 'done';
  inputBytes: number;
  outputBytes: number;
  seconds: number;
  /** The process's RSS before the first entry (node, tsx and the libraries loaded). */
  rssBeforeMb: number;
}

const MB = 1024 * 1024;
const pool = crypto.randomBytes(4 * MB);

function small(i: number): Readable {
  return Readable.from(
    (function* () {
      const lines = [];
      for (let k = 0; k < 20; k++)
        lines.push(`{"entry":${i},"line":${k},"id":"${crypto.createHash('md5').update(`${i}:${k}`).digest('hex')}"}`);
      yield Buffer.from(`[${lines.join(',\n')}]\n`);
    })(),
  );
}

function large(i: number, mb: number): Readable {
  return Readable.from(
    (function* () {
      for (let k = 0; k < mb; k++) {
        const at = ((i * 7 + k) * 65_536) % (3 * MB);
        yield pool.subarray(at, at + MB);
      }
    })(),
  );
}

async function main(): Promise<void> {
  const [library, smallText, largeText, largeMbText] = process.argv.slice(2) as [ZipLibrary, string, string, string];
  const smallEntries = Number(smallText);
  const largeEntries = Number(largeText);
  const largeMb = Number(largeMbText);
  let inputBytes = 0;
  let outputBytes = 0;
  const counted = (s: Readable) => s.on('data', (c: Buffer) => (inputBytes += c.length));
  const sink = new Writable({
    highWaterMark: MB,
    write(chunk: Buffer, _encoding, done) {
      outputBytes += chunk.length;
      done();
    },
  });
  const entries = [
    ...Array.from({ length: smallEntries }, (_, i) => ({ name: `small/${i}.json`, open: () => small(i) })),
    ...Array.from({ length: largeEntries }, (_, i) => ({ name: `large/${i}.bin`, open: () => large(i, largeMb) })),
  ];
  const written = finished(sink);
  const rssBeforeMb = process.memoryUsage.rss() / MB;
  const started = process.hrtime.bigint();
  if (library === 'yazl') {
    const zip = new ZipFile();
    for (const e of entries) zip.addReadStreamLazy(e.name, (ready) => ready(null, counted(e.open())));
    zip.end();
    (zip.outputStream as Readable).pipe(sink);
  } else {
    const zip = new ZipArchive({ zlib: { level: 6 } });
    zip.on('error', (error) => {
      throw error;
    });
    zip.pipe(sink);
    if (library === 'archiver') {
      for (const e of entries) zip.append(counted(e.open()), { name: e.name });
    } else {
      for (const e of entries) {
        const taken = once(zip, 'entry');
        zip.append(counted(e.open()), { name: e.name });
        await taken;
      }
    }
    await zip.finalize();
  }
  await written;
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  process.send!({ type: 'done', inputBytes, outputBytes, seconds, rssBeforeMb } satisfies ZipDone);
  process.disconnect();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
