/**
 * Mailbox import of a generated mbox (MAILBOX_IMPORT_BYTES, default 2G; a comma list such as
 * `200M,1G` runs each size, to show whether memory stays flat as the file grows) into one
 * address, through the real path: `POST /imports/upload` streaming the file from disk to the
 * service in its own process, then the import process splitting, parsing, deduplicating and
 * filing each message (and the threads projector filing the events).
 *
 * The mbox is written to a temp folder and deleted after: messages of 2 KB to 700 KB, a third with
 * an attachment (random bytes, base64), threads of three, a tenth sent by the address itself,
 * takeout's `X-Gmail-Labels` (inbox, unread, sent, three custom labels). MAILBOX_IMPORT_FORMATS
 * (default `mbox,tgz`): the bare mbox, and the same inside a tgz as a takeout packs it.
 *
 *   mailbox-import.floor    the same file (gunzipped and untarred for a tgz) split by the import's splitter and read by mailparser or
 *                           mailsplit alone in a child process (bench/mbox-floor.ts): MB/s,
 *                           messages/s, RSS peak
 *   mailbox-import.run      upload MB/s; then from the import's start to completed: MB/s,
 *                           messages/s; the server process's RSS (sampled every 100 ms) before, at
 *                           its peak during the upload and the run, after. Target: RSS <= 300 MB
 *                           whatever the size.
 */
import { fork } from 'node:child_process';
import crypto from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { once } from 'node:events';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import tar from 'tar-stream';
import { createAddress } from '../commands/addresses/handlers.ts';
import { addDomain } from '../commands/domains/handlers.ts';
import { createWorkspace } from '../commands/workspaces/handlers.ts';
import { openSystem } from '../system.ts';
import type { FloorDone, FloorReader } from './mbox-floor.ts';
import { besideBench, emit, freshDatabase, note, RssSampler, round, startServer } from './support.ts';

const SIZES = (process.env.MAILBOX_IMPORT_BYTES ?? '2G').split(',').map(bytesOf);
type Format = 'mbox' | 'tgz';
/** MAILBOX_IMPORT_FORMATS: the bare mbox, the same inside a tgz, or both (default). */
const FORMATS = (process.env.MAILBOX_IMPORT_FORMATS ?? 'mbox,tgz').split(',') as Format[];
const MAILBOX = 'ann@ours.example.com';
const RSS_TARGET = 'RSS peak <= 300 MB whatever the size';
const MB = 1024 * 1024;

function bytesOf(text: string): number {
  const m = /^(\d+(?:\.\d+)?)([KMG]?)$/i.exec(text.trim());
  if (!m) throw new Error(`MAILBOX_IMPORT_BYTES: ${text} is not a size (e.g. 2G, 200M, 1048576)`);
  return Math.round(Number(m[1]) * 1024 ** ' KMG'.indexOf((m[2] || ' ').toUpperCase()));
}

export async function mailboxImportBench(): Promise<void> {
  for (const size of SIZES) await one(size);
}

async function one(size: number): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'wms-bench-import-'));
  try {
    const mbox = path.join(dir, 'takeout.mbox');
    note(`mailbox-import: writing a ${round(size / MB)} MB mbox`);
    const generated = await writeMbox(mbox, size);
    const bytes = (await stat(mbox)).size;
    note(
      `mailbox-import: ${generated.messages} messages, ${generated.attachments} attachments, ${round(bytes / MB)} MB`,
    );
    for (const format of FORMATS) {
      const file = format === 'tgz' ? await writeTgz(mbox, path.join(dir, 'takeout.tgz')) : mbox;
      await importOnce(path.join(dir, format), file, format, bytes, generated);
      if (file !== mbox) await rm(file);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The floors, then the import of `file` (the mbox, or the mbox in a tgz) on a fresh database and server. */
async function importOnce(
  dir: string,
  file: string,
  format: Format,
  bytes: number,
  generated: { messages: number; attachments: number },
): Promise<void> {
  const database = await freshDatabase('mailbox_import');
  try {
    const sizeMb = round(bytes / MB);
    const uploadBytes = (await stat(file)).size;
    const floors: Record<string, { mbPerSec: number; messagesPerSec: number }> = {};
    for (const reader of ['mailsplit', 'mailparser'] as const) {
      const floor = await runFloor(file, reader);
      if (floor.messages !== generated.messages)
        throw new Error(`floor ${reader}: split ${floor.messages} of ${generated.messages} messages`);
      floors[reader] = {
        mbPerSec: round(bytes / MB / floor.seconds),
        messagesPerSec: round(floor.messages / floor.seconds),
      };
      await emit({
        bench: 'mailbox-import.floor',
        reader,
        format,
        sizeMb,
        messages: floor.messages,
        seconds: round(floor.seconds, 2),
        ...floors[reader],
        rssBeforeMb: round(floor.rssBeforeMb),
        rssPeakMb: floor.rssPeakMb,
      });
    }

    const dataDir = path.join(dir, 'data');
    const options = { dataDir, secretsKey: Buffer.alloc(32, 7).toString('base64') };
    const system = await openSystem(database.url, { ...options, poolSize: 2 });
    const ws = await createWorkspace(system.commands, { name: 'Bench import', ownerEmail: 'owner@bench.test' });
    const actor = { workspaceId: ws.workspaceId, kind: 'operator' as const, id: null };
    const now = new Date().toISOString();
    const domainId = await addDomain(system.commands, system.domains, actor, { domain: 'ours.example.com' }, now);
    const { addressId } = await createAddress(
      system.commands,
      actor,
      { address: MAILBOX, localPart: 'ann', domain: 'ours.example.com', domainId, enabled: true },
      now,
    );
    await system.close();

    const server = await startServer(database.url, 0, options);
    try {
      const rss = new RssSampler(server.pid).start();
      const headers = { authorization: `Bearer ${ws.apiKey}` };
      note(`mailbox-import: uploading ${round(uploadBytes / MB)} MB (${format}) to POST /imports/upload`);
      const uploadStarted = process.hrtime.bigint();
      const res = await fetch(`${server.baseUrl}/imports/upload?addressId=${addressId}`, {
        method: 'POST',
        headers: {
          ...headers,
          'content-type': format === 'tgz' ? 'application/gzip' : 'application/mbox',
          'content-length': String(uploadBytes),
          'x-filename': path.basename(file),
        },
        body: Readable.toWeb(createReadStream(file, { highWaterMark: MB })) as ReadableStream,
        duplex: 'half',
      } as RequestInit);
      const created = (await res.json()) as ImportView;
      if (res.status !== 201)
        throw new Error(`POST /imports/upload answered ${res.status}: ${JSON.stringify(created)}`);
      const uploadSeconds = Number(process.hrtime.bigint() - uploadStarted) / 1e9;
      const upload = rss.stop();
      const run = new RssSampler(server.pid).start();
      const cpuBefore = await server.cpuSeconds();

      let view = created;
      let lastNote = Date.now();
      while (view.status !== 'completed' && view.status !== 'failed' && view.status !== 'cancelled') {
        await new Promise((r) => setTimeout(r, 500));
        const got = await fetch(`${server.baseUrl}/imports/${created.id}`, { headers });
        if (got.status !== 200) throw new Error(`GET /imports/{id} answered ${got.status}: ${await got.text()}`);
        view = (await got.json()) as ImportView;
        if (Date.now() - lastNote > 15_000) {
          lastNote = Date.now();
          note(
            `mailbox-import: ${view.status}, ${round(view.processedBytes / MB)} of ${sizeMb} MB, ${JSON.stringify(view.counts)}`,
          );
        }
      }
      const during = run.stop();
      const cpuSeconds = (await server.cpuSeconds()) - cpuBefore;
      if (view.status !== 'completed') throw new Error(`the import ended ${view.status}: ${view.lastError}`);
      const seconds = (Date.parse(view.finishedAt!) - Date.parse(view.startedAt!)) / 1000;
      const filed = view.counts.imported + view.counts.skipped;
      if (
        view.counts.imported + view.counts.duplicate + view.counts.skipped + view.counts.notImported !==
        generated.messages
      )
        throw new Error(`the import counted ${JSON.stringify(view.counts)} of ${generated.messages} messages`);
      const messagesPerSec = round(generated.messages / seconds);
      await emit({
        bench: 'mailbox-import.run',
        via: 'POST /imports/upload',
        format,
        sizeMb,
        uploadMb: round(uploadBytes / MB),
        messages: generated.messages,
        attachments: generated.attachments,
        counts: view.counts,
        filed,
        uploadSeconds: round(uploadSeconds, 2),
        uploadMbPerSec: round(uploadBytes / MB / uploadSeconds),
        seconds: round(seconds, 2),
        mbPerSec: round(bytes / MB / seconds, 2),
        messagesPerSec,
        serverCpuShare: round(cpuSeconds / seconds, 2),
        rssStartMb: upload.rssStartMb,
        rssPeakUploadMb: upload.rssPeakMb,
        rssPeakMb: Math.max(upload.rssPeakMb, during.rssPeakMb),
        rssEndMb: during.rssEndMb,
        floorMailparserMessagesPerSec: floors.mailparser!.messagesPerSec,
        ratio: round(messagesPerSec / floors.mailparser!.messagesPerSec, 2),
        target: RSS_TARGET,
        note:
          'seconds from the import started to completed (its startedAt and finishedAt), the upload before it; ' +
          'serverCpuShare: CPU seconds of the server process over those seconds (2 cores)',
      });
    } finally {
      await server.close();
    }
  } finally {
    await database.drop();
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * The mbox inside a tgz as a takeout makes it (`Takeout/Mail/….mbox`, beside a file that is not
 * mail, which the import passes over), gzip at its default level.
 */
async function writeTgz(mbox: string, file: string): Promise<string> {
  note('mailbox-import: packing the mbox into a tgz');
  const pack = tar.pack();
  const written = pipeline(pack, createGzip(), createWriteStream(file));
  const info = Buffer.from('{"archive":"bench takeout"}\n');
  pack.entry({ name: 'Takeout/archive_browser.json', size: info.length }, info);
  const entry = pack.entry({
    name: 'Takeout/Mail/All mail Including Spam and Trash.mbox',
    size: (await stat(mbox)).size,
  });
  await pipeline(createReadStream(mbox, { highWaterMark: MB }), entry);
  pack.finalize();
  await written;
  return file;
}

interface ImportView {
  id: string;
  status: string;
  processedBytes: number;
  counts: { imported: number; duplicate: number; skipped: number; notImported: number };
  lastError: string | null;
  startedAt: string | null;
  finishedAt: string | null;
}

async function runFloor(file: string, reader: FloorReader): Promise<FloorDone & { rssPeakMb: number }> {
  note(`mailbox-import: the floor, ${reader} alone`);
  const child = fork(besideBench('mbox-floor'), [file, reader], {
    stdio: ['ignore', 2, 2, 'ipc'],
  });
  const rss = new RssSampler(child.pid!).start();
  const done = new Promise<FloorDone>((resolve, reject) => {
    child.once('message', (m: FloorDone) => resolve(m));
    child.once('exit', (code) => reject(new Error(`the ${reader} floor exited (${code}) before it was done`)));
  });
  const result = await done;
  const { rssPeakMb } = rss.stop();
  return { ...result, rssPeakMb };
}

/** A deterministic generator (mulberry32): the same size gives the same file. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = (
  'the budget for next quarter looks fine but we should review travel costs before the offsite and ' +
  'send the contract to legal once the numbers are agreed thanks for the notes from the call yesterday ' +
  'please find attached the draft and let me know what you think about the timeline and the launch plan'
).split(' ');
const LABELS = ['Projects', 'Receipts', 'Travel'];

/**
 * Writes an mbox of about `size` bytes. Attachments are slices of a pool of random base64 lines
 * at random line offsets, so each is different without drawing random bytes per message.
 */
async function writeMbox(file: string, size: number): Promise<{ messages: number; attachments: number }> {
  const rand = random(size % 2 ** 31);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)]!;
  const LINE = 77;
  const poolLines = Math.floor((16 * MB) / LINE);
  const pool = Buffer.from(
    `${crypto
      .randomBytes(poolLines * 57)
      .toString('base64')
      .match(/.{76}/g)!
      .join('\n')}\n`,
  );
  const out = createWriteStream(file, { highWaterMark: 4 * MB });
  const write = async (chunk: Buffer | string) => {
    if (!out.write(chunk)) await once(out, 'drain');
  };
  const epoch = Date.UTC(2019, 0, 1);
  let written = 0;
  let messages = 0;
  let attachments = 0;
  while (written < size) {
    const n = messages++;
    const thread = Math.floor(n / 3);
    const sent = n % 10 === 9;
    const peer = `person${thread % 500}@corr${thread % 40}.example`;
    const from = sent ? MAILBOX : peer;
    const date = new Date(epoch + n * 600_000);
    const r = rand();
    const attachment = r < 0.05 ? 200 + rand() * 500 : r < 0.33 ? 20 + rand() * 130 : 0;
    const labels = sent
      ? 'Sent'
      : [n % 4 === 0 ? 'Inbox,Unread' : 'Inbox', ...(n % 7 === 0 ? [pick(LABELS)] : [])].join(',');
    const text: string[] = [];
    const textBytes = 2000 + rand() * 8000;
    for (let len = 0, line = ''; len < textBytes; ) {
      line += (line ? ' ' : '') + pick(WORDS);
      if (line.length > 68) {
        text.push(line);
        len += line.length + 1;
        line = '';
      }
    }
    const headers = [
      `From ${from} ${date.toUTCString().replace(/^(\w+), (\d+) (\w+) (\d+) ([\d:]+) GMT$/, '$1 $3 $2 $5 $4')}`,
      `X-GM-THRID: ${1_600_000_000_000 + thread}`,
      `X-Gmail-Labels: ${labels}`,
      `Message-ID: <m${n}.${size}@gen.bench.example>`,
      ...(n % 3 === 0
        ? []
        : [`In-Reply-To: <m${n - 1}.${size}@gen.bench.example>`, `References: <m${n - 1}.${size}@gen.bench.example>`]),
      `Date: ${date.toUTCString().replace('GMT', '+0000')}`,
      `From: ${sent ? 'Ann' : `Person ${thread % 500}`} <${from}>`,
      `To: ${sent ? peer : MAILBOX}`,
      `Subject: ${n % 3 === 0 ? '' : 'Re: '}${pick(WORDS)} ${pick(WORDS)} notes ${thread}`,
      'MIME-Version: 1.0',
    ];
    let message: string;
    if (attachment === 0) {
      message = `${headers.join('\n')}\nContent-Type: text/plain; charset=utf-8\n\n${text.join('\n')}\n`;
      await write(message);
      written += Buffer.byteLength(message);
    } else {
      attachments++;
      const boundary = `b${n}`;
      message =
        `${headers.join('\n')}\nContent-Type: multipart/mixed; boundary="${boundary}"\n\n` +
        `--${boundary}\nContent-Type: text/plain; charset=utf-8\n\n${text.join('\n')}\n` +
        `--${boundary}\nContent-Type: application/pdf; name="report-${n}.pdf"\n` +
        `Content-Disposition: attachment; filename="report-${n}.pdf"\nContent-Transfer-Encoding: base64\n\n`;
      const lines = Math.ceil((attachment * 1024) / LINE);
      const at = Math.floor(rand() * (poolLines - lines)) * LINE;
      const body = pool.subarray(at, at + lines * LINE);
      const end = `--${boundary}--\n`;
      await write(message);
      await write(body);
      await write(end);
      written += Buffer.byteLength(message) + body.length + end.length;
    }
    await write('\n');
    written++;
  }
  out.end();
  await once(out, 'finish');
  return { messages, attachments };
}
