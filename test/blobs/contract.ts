import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import type { Test } from 'tap';
import type { BlobStore } from '../../infra/blobs/port.ts';

/** The blob store contract both adapters are held to. */
export interface BlobStoreFixture {
  /** Opens the adapter under test; the suite closes it. */
  open(): Promise<BlobStore>;
  /** Partial or temporary files the adapter left behind (should be none once a put settles). */
  leftovers(): Promise<string[]>;
}

const sha = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

async function bytesOf(stream: Readable | null): Promise<Buffer | null> {
  if (!stream) return null;
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
}

/** `bytes` in chunks of `size`, as a socket or a parser hands them over. */
function chunked(bytes: Buffer, size: number): Readable {
  const parts: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += size) parts.push(bytes.subarray(at, at + size));
  return Readable.from(parts);
}

export function blobStoreContract(t: Test, fixture: BlobStoreFixture): void {
  let store: BlobStore;
  t.before(async () => {
    store = await fixture.open();
  });
  t.teardown(() => store?.close());

  t.test('bytes put are found at the SHA-256 of their content, whole', async (t) => {
    const bytes = Buffer.concat([Buffer.from('Subject: hello\r\n\r\n'), Uint8Array.from({ length: 256 }, (_, i) => i)]);
    const ref = await store.put(bytes);
    t.same(ref, { sha256: sha(bytes), size: bytes.length, created: true });
    t.equal(await store.has(ref.sha256), true);
    t.same(await store.get(ref.sha256), bytes, 'get answers every byte');
    t.same(await bytesOf(await store.stream(ref.sha256)), bytes, 'stream answers every byte');
  });

  t.test('the same bytes again store nothing new', async (t) => {
    const bytes = Buffer.from(`once ${randomBytes(8).toString('hex')}`);
    const first = await store.put(bytes);
    const again = await store.put(Buffer.from(bytes));
    const streamed = await store.put(Readable.from([bytes]));
    t.equal(first.created, true);
    t.same(again, { sha256: first.sha256, size: bytes.length, created: false });
    t.same(streamed, { sha256: first.sha256, size: bytes.length, created: false });
  });

  t.test('a stream in many chunks is stored as the same blob its bytes make', async (t) => {
    const bytes = randomBytes(3 * 1024 * 1024 + 17);
    const ref = await store.put(chunked(bytes, 64 * 1024));
    t.same(ref, { sha256: sha(bytes), size: bytes.length, created: true });
    const read = await store.get(ref.sha256);
    t.ok(read?.equals(bytes), 'read back byte for byte');
    t.same(await fixture.leftovers(), [], 'no temporary file stays behind');
  });

  t.test('an async iterable of chunks is a source too', async (t) => {
    const parts = ['From: a@example.org\r\n', '\r\n', 'body\r\n'].map((s) => Buffer.from(s));
    async function* source() {
      yield* parts;
    }
    const ref = await store.put(source());
    t.equal(await text((await store.stream(ref.sha256))!), 'From: a@example.org\r\n\r\nbody\r\n');
  });

  t.test('a range of a blob streams those bytes only, both ends included', async (t) => {
    const bytes = randomBytes(300 * 1024);
    const small = Buffer.from(`small ${randomBytes(8).toString('hex')}`);
    const ref = await store.put(bytes);
    const smallRef = await store.put(small);
    t.same(await bytesOf(await store.stream(ref.sha256, { start: 1000, end: 250_000 })), bytes.subarray(1000, 250_001));
    t.same(
      await bytesOf(await store.stream(ref.sha256, { start: bytes.length - 1, end: bytes.length - 1 })),
      bytes.subarray(-1),
    );
    t.same(await bytesOf(await store.stream(smallRef.sha256, { start: 2, end: 5 })), small.subarray(2, 6));
  });

  t.test('a deleted blob is gone; deleting it again is no error', async (t) => {
    const bytes = randomBytes(300 * 1024);
    const small = Buffer.from(`gone ${randomBytes(8).toString('hex')}`);
    for (const b of [bytes, small]) {
      const ref = await store.put(b);
      await store.delete(ref.sha256);
      t.equal(await store.has(ref.sha256), false);
      t.equal(await store.stream(ref.sha256), null);
      await store.delete(ref.sha256);
    }
    await t.rejects(store.delete('../x'), TypeError);
  });

  t.test('an empty blob is a blob', async (t) => {
    const ref = await store.put(Buffer.alloc(0));
    t.equal(ref.sha256, sha(Buffer.alloc(0)));
    t.equal(ref.size, 0);
    t.same(await store.get(ref.sha256), Buffer.alloc(0));
  });

  t.test('an address the store does not hold answers absent, not an error', async (t) => {
    const unknown = sha(Buffer.from(`never stored ${randomBytes(8).toString('hex')}`));
    t.equal(await store.has(unknown), false);
    t.equal(await store.get(unknown), null);
    t.equal(await store.stream(unknown), null);
  });

  t.test('anything but a SHA-256 address is refused before it reaches a path or a key', async (t) => {
    for (const bad of ['../../etc/passwd', 'A'.repeat(64), `${'a'.repeat(63)}/`, '', 'a'.repeat(65)]) {
      await t.rejects(store.has(bad), TypeError, `has ${JSON.stringify(bad)}`);
      await t.rejects(store.get(bad), TypeError, `get ${JSON.stringify(bad)}`);
      await t.rejects(store.stream(bad), TypeError, `stream ${JSON.stringify(bad)}`);
    }
  });

  t.test('a source that fails leaves nothing: no blob of its first bytes, no temporary file', async (t) => {
    const first = randomBytes(200 * 1024);
    const failing = new Readable({
      read() {
        this.push(first);
        this.destroy(new Error('connection lost'));
      },
    });
    await t.rejects(store.put(failing), /connection lost/);
    t.equal(await store.has(sha(first)), false);
    t.same(await fixture.leftovers(), []);
  });

  t.test('concurrent puts of the same bytes all answer the one address', async (t) => {
    const bytes = randomBytes(100 * 1024);
    const refs = await Promise.all(
      Array.from({ length: 8 }, (_, i) => store.put(i % 2 ? chunked(bytes, 8192) : Buffer.from(bytes))),
    );
    t.same(new Set(refs.map((r) => r.sha256)), new Set([sha(bytes)]));
    t.ok(
      refs.some((r) => r.created),
      'one of them stored it',
    );
    t.ok((await store.get(sha(bytes)))?.equals(bytes));
    t.same(await fixture.leftovers(), []);
  });
}
