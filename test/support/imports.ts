import type { TestApp } from './app.ts';

/** One message of a generated mbox. */
export interface MboxMessage {
  id: string;
  subject: string;
  from?: string;
  to?: string;
  body?: string;
  labels?: string;
  inReplyTo?: string;
  date?: string;
}

/** An RFC 5322 message (LF line ends, as mbox files have them). */
export function message(m: MboxMessage): string {
  return [
    ...(m.labels === undefined ? [] : [`X-Gmail-Labels: ${m.labels}`]),
    `From: ${m.from ?? 'Olga <olga@outside.test>'}`,
    `To: ${m.to ?? 'a@imports.example.com'}`,
    `Subject: ${m.subject}`,
    `Date: ${m.date ?? 'Tue, 02 Jan 2024 10:00:00 +0000'}`,
    `Message-ID: <${m.id}>`,
    ...(m.inReplyTo ? [`In-Reply-To: <${m.inReplyTo}>`] : []),
    'Content-Type: text/plain; charset=utf-8',
    '',
    m.body ?? `Body of ${m.subject}.`,
    '',
  ].join('\n');
}

/** An mboxrd file: each message after a `From ` line, body lines starting `From ` quoted with `>`. */
export function mbox(messages: MboxMessage[]): Buffer {
  return Buffer.from(
    messages
      .map((m) => `From MAILER-DAEMON Tue Jan  2 10:00:00 2024\n${message(m).replace(/^(>*From )/gm, '>$1')}\n`)
      .join(''),
  );
}

/** `n` messages of distinct ids with a common tag. */
export const many = (tag: string, n: number, extra: Partial<MboxMessage> = {}) =>
  Array.from({ length: n }, (_, i) => ({ id: `${tag}-${i}@outside.test`, subject: `${tag} ${i}`, ...extra }));

/** Plans, uploads every part and starts an import of `files`; answers the import as start answered it. */
export async function runImport(
  h: TestApp,
  key: string,
  addressId: string,
  files: { name: string; content: Buffer }[],
  options: Record<string, boolean> = {},
) {
  const created = await h.request(key, 'POST', '/imports', {
    addressId,
    files: files.map((f) => ({ name: f.name, bytes: f.content.length })),
    options,
  });
  if (created.statusCode !== 201) throw new Error(created.body);
  const plan = created.json();
  await uploadAll(h, key, plan, files);
  const started = await h.request(key, 'POST', `/imports/${plan.id}/start`);
  if (started.statusCode !== 200) throw new Error(started.body);
  return started.json();
}

export async function uploadAll(
  h: TestApp,
  key: string,
  plan: { id: string; chunkBytes: number; files: { chunks: number }[] },
  files: { content: Buffer }[],
) {
  for (const [i, f] of files.entries())
    for (let c = 0; c < plan.files[i]!.chunks; c++) {
      const res = await putChunk(
        h,
        key,
        plan.id,
        i,
        c,
        f.content.subarray(c * plan.chunkBytes, (c + 1) * plan.chunkBytes),
      );
      if (res.statusCode !== 200) throw new Error(res.body);
    }
}

export const putChunk = (h: TestApp, key: string, id: string, file: number, chunk: number, bytes: Buffer) =>
  h.request(key, 'PUT', `/imports/${id}/files/${file}/chunks/${chunk}`, bytes, {
    'content-type': 'application/octet-stream',
  });

/** Polls the import until `done` says so (default: settled and its upload deleted, which follows the settling). */
export async function waitImport(
  h: TestApp,
  key: string,
  id: string,
  done: (i: any) => boolean = (i) => ['completed', 'failed', 'cancelled'].includes(i.status) && i.uploadDeleted,
  timeoutMs = 60_000,
) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const res = await h.request(key, 'GET', `/imports/${id}`);
    const body = res.json();
    if (done(body)) return body;
    if (Date.now() > until) throw new Error(`import not there in time: ${res.body}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
