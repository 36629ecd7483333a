import t from 'tap';
import { sniffImage } from '../../domain/templates/images.ts';

const bytes = (...parts: (number[] | string)[]) =>
  Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : Buffer.from(p))));

t.test('sniffImage: the kind by the first bytes, nothing else', async (t) => {
  t.equal(sniffImage(bytes([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'rest')), 'png');
  t.equal(sniffImage(bytes([0xff, 0xd8, 0xff, 0xdb])), 'jpg');
  t.equal(sniffImage(bytes('GIF87a')), 'gif');
  t.equal(sniffImage(bytes('GIF89a', [1, 2])), 'gif');
  t.equal(sniffImage(bytes('RIFF', [1, 2, 3, 4], 'WEBPVP8L')), 'webp');
  t.equal(sniffImage(bytes('RIFF', [1, 2, 3, 4], 'WAVEfmt ')), null, 'another RIFF file');
  t.equal(sniffImage(bytes([0x89, 0x50, 0x4e, 0x47])), null, 'a cut signature');
  t.equal(sniffImage(bytes('<svg xmlns="http://www.w3.org/2000/svg"/>')), null, 'svg: scripts, refused');
  t.equal(sniffImage(bytes('')), null);
});
