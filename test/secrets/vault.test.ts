import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { inspect } from 'node:util';
import t from 'tap';
import { openPool } from '../../infra/db.ts';
import { loadMasterKey, MASTER_KEY_FILE } from '../../infra/secrets/master-key.ts';
import { SecretVault } from '../../infra/secrets/vault.ts';
import { freshDatabase } from '../support/database.ts';

const PEM = crypto
  .generateKeyPairSync('rsa', { modulusLength: 1024 })
  .privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;

/**
 * A fresh database with the vault's table. The pool is the service's kind: `end()` resolves before
 * its connections have closed, so the drop may terminate one still closing, which a bare pg.Pool
 * would raise as an unhandled error.
 */
async function database(t: Parameters<typeof freshDatabase>[0]) {
  let drop: () => Promise<void> | void = () => {};
  const pool = openPool({ connectionString: await freshDatabase({ teardown: (fn) => (drop = fn) }), max: 4 });
  t.teardown(async () => {
    await pool.end();
    await drop();
  });
  await SecretVault.migrate(pool);
  return pool;
}

t.test('round trip: what was put comes back; put again replaces; an unknown id is undefined', async (t) => {
  const pool = await database(t);
  const vault = await SecretVault.open(pool, crypto.randomBytes(32));
  await vault.put('dkim:d1:wms202601', PEM);
  await vault.put('provider:imp1', 'sk_live_ümlaut_🔑');
  t.equal(await vault.get('dkim:d1:wms202601'), PEM);
  t.equal(await vault.get('provider:imp1'), 'sk_live_ümlaut_🔑');
  await vault.put('provider:imp1', 'rotated');
  t.equal(await vault.get('provider:imp1'), 'rotated');
  t.equal(await vault.get('dkim:d2:wms202601'), undefined);
});

t.test('the table never holds the plaintext, and one value written twice is stored differently', async (t) => {
  const pool = await database(t);
  const vault = await SecretVault.open(pool, crypto.randomBytes(32));
  const secret = 'sk_live_0123456789abcdefghijklmnopqrstuvwxyz';
  await vault.put('a', secret);
  await vault.put('b', secret);
  await vault.put('pem', PEM);
  const { rows } = await pool.query<{ id: string; nonce: Buffer; ciphertext: Buffer; tag: Buffer; whole: string }>(
    'SELECT id, nonce, ciphertext, tag, t::text AS whole FROM vault_secrets t WHERE id IN ($1, $2, $3) ORDER BY id',
    ['a', 'b', 'pem'],
  );
  t.equal(rows.length, 3);
  const pemBody = PEM.split('\n')[1]!;
  for (const row of rows) {
    const bytes = Buffer.concat([row.nonce, row.ciphertext, row.tag]);
    for (const needle of [secret, pemBody, 'PRIVATE KEY']) {
      t.notOk(bytes.includes(needle), `${row.id}: no plaintext in the bytes`);
      t.notOk(row.whole.includes(needle), `${row.id}: no plaintext in the row as text`);
      t.notOk(row.whole.includes(Buffer.from(needle).toString('hex')), `${row.id}: no plaintext as hex`);
    }
    t.equal(row.nonce.length, 12, 'a 12-byte nonce');
    t.equal(row.tag.length, 16, 'a 16-byte GCM tag');
  }
  const [a, b] = rows;
  t.notSame(a!.nonce, b!.nonce, 'a fresh nonce per write');
  t.notSame(a!.ciphertext, b!.ciphertext);
});

t.test('another master key: the vault refuses to open, and a secret does not decrypt', async (t) => {
  const pool = await database(t);
  const key = crypto.randomBytes(32);
  const vault = await SecretVault.open(pool, key);
  await vault.put('dkim:d1:wms202601', PEM);
  await t.rejects(
    SecretVault.open(pool, crypto.randomBytes(32)),
    /not the one the stored secrets were encrypted under/,
  );
  t.equal(await (await SecretVault.open(pool, key)).get('dkim:d1:wms202601'), PEM, 'the right key still opens it');

  // A second database, its vault under another key, given this database's row as if restored from a mix of backups.
  const other = await database(t);
  const stranger = await SecretVault.open(other, crypto.randomBytes(32));
  const { rows } = await pool.query('SELECT id, nonce, ciphertext, tag FROM vault_secrets WHERE id = $1', [
    'dkim:d1:wms202601',
  ]);
  await other.query('INSERT INTO vault_secrets (id, nonce, ciphertext, tag) VALUES ($1, $2, $3, $4)', [
    rows[0].id,
    rows[0].nonce,
    rows[0].ciphertext,
    rows[0].tag,
  ]);
  await t.rejects(stranger.get('dkim:d1:wms202601'), /does not decrypt under this master key/);
});

t.test('a value moved to another id, or altered, does not decrypt', async (t) => {
  const pool = await database(t);
  const vault = await SecretVault.open(pool, crypto.randomBytes(32));
  await vault.put('dkim:d1:wms202601', PEM);
  await vault.put('dkim:d2:wms202601', 'the other domain');
  await pool.query(
    `UPDATE vault_secrets SET (nonce, ciphertext, tag) = (SELECT nonce, ciphertext, tag FROM vault_secrets WHERE id = 'dkim:d1:wms202601') WHERE id = 'dkim:d2:wms202601'`,
  );
  await t.rejects(
    vault.get('dkim:d2:wms202601'),
    /"dkim:d2:wms202601" does not decrypt/,
    'the id is bound to the value',
  );
  t.equal(await vault.get('dkim:d1:wms202601'), PEM);
  await pool.query(
    `UPDATE vault_secrets SET ciphertext = set_byte(ciphertext, 0, get_byte(ciphertext, 0) # 1) WHERE id = 'dkim:d1:wms202601'`,
  );
  await t.rejects(vault.get('dkim:d1:wms202601'), /does not decrypt/, 'one flipped bit');
});

t.test('delete: the secret is gone; deleting again finds nothing', async (t) => {
  const pool = await database(t);
  const vault = await SecretVault.open(pool, crypto.randomBytes(32));
  await vault.put('provider:imp1', 'sk_live_x');
  await vault.put('provider:imp2', 'sk_live_y');
  t.equal(await vault.delete('provider:imp1'), true);
  t.equal(await vault.get('provider:imp1'), undefined);
  t.equal(
    (await pool.query('SELECT 1 FROM vault_secrets WHERE id = $1', ['provider:imp1'])).rowCount,
    0,
    'the row is gone',
  );
  t.equal(await vault.delete('provider:imp1'), false);
  t.equal(await vault.get('provider:imp2'), 'sk_live_y', 'others stay');
});

t.test('the vault shows no key when logged', async (t) => {
  const pool = await database(t);
  const key = crypto.randomBytes(32);
  const vault = await SecretVault.open(pool, key);
  const shown = inspect(vault, { depth: 10, showHidden: true }) + JSON.stringify(vault);
  t.notOk(shown.includes(key.toString('base64')), 'not as base64');
  t.notOk(shown.includes(key.toString('hex')), 'not as hex');
  t.notOk(shown.includes('Buffer'), 'no buffer shown at all');
});

t.test('master key from SECRETS_KEY: base64 of exactly 32 bytes', async (t) => {
  const key = crypto.randomBytes(32);
  t.same(await loadMasterKey({ secretsKey: key.toString('base64'), dataDir: '/nonexistent' }), key);
  for (const bad of [
    '',
    'short',
    crypto.randomBytes(16).toString('base64'),
    crypto.randomBytes(33).toString('base64'),
    `${key.toString('base64')}!`,
  ]) {
    await t.rejects(
      loadMasterKey({ secretsKey: bad, dataDir: '/nonexistent' }),
      /SECRETS_KEY must be the base64 of 32 bytes/,
      JSON.stringify(bad),
    );
  }
});

t.test('master key without SECRETS_KEY: a key file under DATA_DIR, made once with mode 0600', async (t) => {
  const dataDir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'wms-secrets-')), 'data');
  t.teardown(() => fs.rmSync(path.dirname(dataDir), { recursive: true, force: true }));
  const file = path.join(dataDir, MASTER_KEY_FILE);
  const starts = await Promise.all([1, 2, 3].map(() => loadMasterKey({ dataDir })));
  t.equal(starts[0]!.length, 32);
  t.same(starts[1], starts[0], 'processes starting at once share one key');
  t.same(starts[2], starts[0]);
  t.equal(fs.statSync(file).mode & 0o777, 0o600);
  t.same(fs.readdirSync(dataDir), [MASTER_KEY_FILE], 'no temporary file left');
  t.same(await loadMasterKey({ dataDir }), starts[0], 'the next start reads the same key');

  fs.chmodSync(file, 0o644);
  await t.rejects(loadMasterKey({ dataDir }), /may be read by others \(mode 644\).*chmod 600/);
  fs.chmodSync(file, 0o600);
  fs.writeFileSync(file, 'not a key\n');
  await t.rejects(loadMasterKey({ dataDir }), /must be the base64 of 32 bytes/);
});

t.test('claim: the first value stays; every claimer gets it, racing or later', async (t) => {
  const pool = await database(t);
  const vault = await SecretVault.open(pool, crypto.randomBytes(32));
  const claims = await Promise.all(['one', 'two', 'three'].map((v) => vault.claim('k', v)));
  t.equal(new Set(claims).size, 1, 'all racing claimers hold the same secret');
  t.equal(await vault.claim('k', 'four'), claims[0]);
  t.equal(await vault.get('k'), claims[0]);
});
