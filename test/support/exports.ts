import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { TestApp } from './app.ts';

const run = promisify(execFile);

/** The bytes of the PDF that `reportWithAttachment` carries (base64 in its message). */
export const ATTACHMENT = Buffer.from('%PDF-1.4 the attachment bytes\n');

/** A message to `to` with a PDF attachment: exports keep attachments inside their messages. */
export const reportWithAttachment = (to: string) =>
  [
    'From: Olga <olga@outside.test>',
    `To: ${to}`,
    'Subject: The report',
    'Date: Wed, 03 Jan 2024 10:00:00 +0000',
    'Message-ID: <report@outside.test>',
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="b1"',
    '',
    '--b1',
    'Content-Type: text/plain; charset=utf-8',
    '',
    'See attached.',
    '--b1',
    'Content-Type: application/pdf; name="report.pdf"',
    'Content-Disposition: attachment; filename="report.pdf"',
    'Content-Transfer-Encoding: base64',
    '',
    ATTACHMENT.toString('base64'),
    '--b1--',
    '',
  ].join('\n');

/** Polls an export until `done` says so (by default: settled). */
export async function waitExport(
  h: Pick<TestApp, 'request'>,
  key: string,
  id: string,
  done: (e: any) => boolean = (e) => ['ready', 'failed', 'expired'].includes(e.status),
  timeoutMs = 60_000,
) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const res = await h.request(key, 'GET', `/exports/${id}`);
    const body = res.json();
    if (done(body)) return body;
    if (Date.now() > until) throw new Error(`export not there in time: ${res.body}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A zip read with Info-ZIP's `unzip`, as a person would open the download: its entries and their bytes. */
export interface OpenedZip {
  names: string[];
  read(name: string): Promise<Buffer>;
  /** `unzip -t`'s verdict on every entry's CRC. */
  tested: string;
}

export async function openZip(t: { teardown(fn: () => Promise<void>): void }, bytes: Buffer): Promise<OpenedZip> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'wms-zip-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'export.zip');
  await writeFile(file, bytes);
  const list = await run('unzip', ['-Z1', file]);
  const tested = await run('unzip', ['-tq', file]);
  return {
    names: list.stdout.split('\n').filter((n) => n !== ''),
    read: async (name) =>
      (await run('unzip', ['-p', file, name], { encoding: 'buffer', maxBuffer: 256 * 1024 * 1024 })).stdout,
    tested: tested.stdout.trim(),
  };
}
