import { crc32, deflateRawSync, gzipSync } from 'node:zlib';
import tar from 'tar-stream';

/** One entry of a hand-made zip; the fields a hostile zip lies about or sets are open. */
export interface ZipEntry {
  name: string;
  data?: Buffer;
  /** Unix mode (file type and permissions), in the upper half of the external attributes. */
  mode?: number;
  /** Stored, not deflated. */
  store?: boolean;
  /** The uncompressed size written in the headers, when it should lie. */
  declaredSize?: number;
}

/**
 * A zip written byte by byte: zip libraries refuse to write the names and kinds a hostile archive
 * has (`../`, absolute paths, symbolic links, sizes that lie), so the tests make their own.
 */
export function zip(entries: ZipEntry[]): Buffer {
  const locals: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const e of entries) {
    const data = e.data ?? Buffer.alloc(0);
    const body = e.store ? data : deflateRawSync(data);
    const method = e.store ? 0 : 8;
    const name = Buffer.from(e.name);
    const crc = crc32(data);
    const size = e.declaredSize ?? data.length;
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(0x800, 6);
    local.writeUInt16LE(method, 8);
    local.writeUInt16LE(0x21, 12);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(body.length, 18);
    local.writeUInt32LE(size, 22);
    local.writeUInt16LE(name.length, 26);
    const cen = Buffer.alloc(46);
    cen.writeUInt32LE(0x02014b50, 0);
    cen.writeUInt16LE((3 << 8) | 20, 4);
    cen.writeUInt16LE(20, 6);
    cen.writeUInt16LE(0x800, 8);
    cen.writeUInt16LE(method, 10);
    cen.writeUInt16LE(0x21, 14);
    cen.writeUInt32LE(crc, 16);
    cen.writeUInt32LE(body.length, 20);
    cen.writeUInt32LE(size, 24);
    cen.writeUInt16LE(name.length, 28);
    cen.writeUInt32LE(((e.mode ?? (e.name.endsWith('/') ? 0o40755 : 0o100644)) << 16) >>> 0, 38);
    cen.writeUInt32LE(offset, 42);
    locals.push(local, name, body);
    central.push(cen, name);
    offset += 30 + name.length + body.length;
  }
  const directory = Buffer.concat(central);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

/** One entry of a tar: a file by default; links and devices as a hostile archive has them. */
export interface TarEntry {
  name: string;
  data?: Buffer;
  type?: 'file' | 'directory' | 'symlink' | 'link' | 'character-device' | 'fifo';
  linkname?: string;
}

/** A gzip'd tar (tar-stream writes whatever name and kind it is given). */
export async function tgz(entries: TarEntry[]): Promise<Buffer> {
  const pack = tar.pack();
  const out: Buffer[] = [];
  const done = (async () => {
    for await (const data of pack) out.push(data as Buffer);
  })();
  for (const e of entries) {
    const type = e.type ?? 'file';
    const data = type === 'file' ? (e.data ?? Buffer.alloc(0)) : Buffer.alloc(0);
    await new Promise<void>((resolve, reject) =>
      pack.entry(
        { name: e.name, type, linkname: e.linkname, size: data.length, mode: type === 'directory' ? 0o755 : 0o644 },
        data,
        (error) => (error ? reject(error) : resolve()),
      ),
    );
  }
  pack.finalize();
  await done;
  return gzipSync(Buffer.concat(out));
}
