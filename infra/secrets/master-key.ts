import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';

export const MASTER_KEY_FILE = 'secrets.key';

/**
 * The vault's master key: `SECRETS_KEY` (base64 of 32 bytes) when set, as production sets it
 * (one key for every process, kept outside the database and its backups). Without it, the key
 * file `<dataDir>/secrets.key`, made on first start with mode 0600; a key file that others may
 * read is refused, as ssh refuses a private key anyone can read.
 */
export async function loadMasterKey(options: { secretsKey?: string; dataDir: string }): Promise<Buffer> {
  if (options.secretsKey !== undefined) return decode(options.secretsKey, 'SECRETS_KEY');
  const file = path.join(options.dataDir, MASTER_KEY_FILE);
  try {
    return await readKeyFile(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  await fs.mkdir(options.dataDir, { recursive: true });
  // Written whole under a temporary name, then linked into place: a crash leaves no half key,
  // and of two processes starting at once the second finds the first one's key.
  const temporary = `${file}.${process.pid}.${crypto.randomBytes(4).toString('hex')}`;
  await fs.writeFile(temporary, `${crypto.randomBytes(32).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  try {
    await fs.link(temporary, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    await fs.unlink(temporary);
  }
  return readKeyFile(file);
}

async function readKeyFile(file: string): Promise<Buffer> {
  const handle = await fs.open(file, 'r');
  try {
    const { mode } = await handle.stat();
    if ((mode & 0o077) !== 0)
      throw new Error(
        `${file} may be read by others (mode ${(mode & 0o777).toString(8)}); make it readable by its owner only: chmod 600 ${file}`,
      );
    return decode((await handle.readFile('utf8')).trim(), file);
  } finally {
    await handle.close();
  }
}

function decode(text: string, source: string): Buffer {
  const key = Buffer.from(text, 'base64');
  if (key.length !== 32 || key.toString('base64') !== text)
    throw new Error(`${source} must be the base64 of 32 bytes (e.g. openssl rand -base64 32)`);
  return key;
}
