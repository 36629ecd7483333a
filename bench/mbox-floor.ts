/**
 * The floor of the mailbox-import benchmark, in a process of its own so its RSS is its own: the
 * mbox read from disk (from inside a tgz when the file is one: gunzip and tar-stream, as the
 * import reads it), split by the import's splitter (processes/mailbox-imports/split.ts), and each
 * message read through by a parser alone, storing nothing:
 *
 *   mailparser   mailparser's MailParser (what the import's parseMessage runs), attachments drained
 *   mailsplit    mailsplit's Splitter, every node and body chunk read
 *
 * Forked by bench/mailbox-import.ts with the file and the reader; answers one `done` message.
 */
import { createReadStream } from 'node:fs';
import { createGunzip } from 'node:zlib';
import { Splitter } from '@zone-eu/mailsplit';
import { MailParser } from 'mailparser';
import tar from 'tar-stream';
import { splitMbox } from '../processes/mailbox-imports/split.ts';

export type FloorReader = 'mailparser' | 'mailsplit';
export interface FloorDone {
  type: 'done';
  messages: number;
  bytes: number;
  seconds: number;
  /** The process's RSS before the first message (node, tsx and the parser loaded). */
  rssBeforeMb: number;
}

/** As the import: a message past 64 MiB is counted and not read. */
const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

async function viaMailparser(raw: Buffer): Promise<void> {
  const parser = new MailParser();
  const ended = new Promise<void>((resolve, reject) => {
    parser.on('data', (part) => {
      if (part.type === 'attachment') {
        part.content.on('end', () => part.release());
        part.content.resume();
      }
    });
    parser.on('end', resolve);
    parser.on('error', reject);
  });
  parser.end(raw);
  await ended;
}

async function viaMailsplit(raw: Buffer): Promise<void> {
  const splitter = new Splitter();
  splitter.end(raw);
  for await (const _ of splitter);
}

/** The mbox itself, or each `.mbox` entry of a tgz as it streams (gunzip and tar-stream, as the import). */
async function* mboxesIn(file: string): AsyncGenerator<AsyncIterable<Buffer>> {
  const source = createReadStream(file, { highWaterMark: 1024 * 1024 });
  if (!file.endsWith('.tgz')) {
    yield source;
    return;
  }
  const extract = tar.extract();
  source.pipe(createGunzip()).pipe(extract);
  for await (const entry of extract) {
    if (entry.header.name.endsWith('.mbox')) yield entry as AsyncIterable<Buffer>;
    else entry.resume();
  }
}

async function main(): Promise<void> {
  const [file, reader] = process.argv.slice(2) as [string, FloorReader];
  const read = reader === 'mailsplit' ? viaMailsplit : viaMailparser;
  const rssBeforeMb = process.memoryUsage.rss() / (1024 * 1024);
  const started = process.hrtime.bigint();
  let messages = 0;
  let bytes = 0;
  for await (const mbox of mboxesIn(file)) {
    for await (const message of splitMbox(mbox, 0, MAX_MESSAGE_BYTES)) {
      messages++;
      bytes += message.next - message.start;
      if (message.raw) await read(message.raw);
    }
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  process.send!({ type: 'done', messages, bytes, seconds, rssBeforeMb } satisfies FloorDone);
  process.disconnect();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
