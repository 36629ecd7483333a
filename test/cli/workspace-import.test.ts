import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { runCli } from '../../cli/run.ts';
import { PostgresTextIndex } from '../../infra/search/postgres.ts';
import { restoreWorkspace } from '../../processes/exports/restore.ts';
import { mailboxLookups } from '../../system.ts';
import { zip } from '../support/archives.ts';
import { addDomain, publish, startDomainsApp } from '../support/domains.ts';
import { reportWithAttachment, waitExport } from '../support/exports.ts';
import { mbox, runImport, waitImport } from '../support/imports.ts';
import { TEST_SECRETS_KEY } from '../support/secrets.ts';

/**
 * The round trip: a workspace with some of everything is exported through the real export
 * process, restored into a new workspace with the CLI's own function, and exported again; the two
 * zips hold the same content, entry by entry, once ids and the instants of writing are set aside
 * (normalise below; docs/decisions/exports.md says which and why). The source's domain is deleted
 * before the restore, as a move to a new workspace would, so the new one can add it.
 */
const run = promisify(execFile);
const dataDir = await mkdtemp(path.join(os.tmpdir(), 'wms-restore-'));
t.teardown(() => rm(dataDir, { recursive: true, force: true }));
const { h, dns } = await startDomainsApp(t, {
  dataDir,
  mailboxImports: { chunkBytes: 64 * 1024, pollMs: 50 },
  exports: { pollMs: 50, progressEveryMs: 0 },
});
const DOMAIN = 'roundtrip.example.com';
const ok = async (res: Promise<{ statusCode: number; body: string; json(): any }>, status = 201) => {
  const r = await res;
  if (r.statusCode !== status) throw new Error(`${r.statusCode} ${r.body}`);
  return r.json();
};

async function exportZip(key: string): Promise<Buffer> {
  const started = await ok(h.request(key, 'POST', '/exports'));
  const ready = await waitExport(h, key, started.id);
  if (ready.status !== 'ready') throw new Error(JSON.stringify(ready));
  return (await h.request(key, 'GET', `/exports/${started.id}/content`)).rawPayload;
}

// The source: two addresses with mail (a thread of two under a custom label, an attachment, a
// `From ` body line, mail sent by the address itself, a message in the trash), contacts with
// names, notes and attributes in an audience, a template of three versions (two published), a
// rule naming the custom label.
const src = await h.workspace();
const key = src.apiKey;
const domain = await addDomain(h, key, DOMAIN);
publish(dns, domain.records);
const a = await ok(h.request(key, 'POST', '/addresses', { address: `a@${DOMAIN}` }));
const b = await ok(h.request(key, 'POST', '/addresses', { address: `b@${DOMAIN}` }));
const importA = await runImport(h, key, a.id, [
  {
    name: 'a.mbox',
    content: Buffer.concat([
      mbox([
        { id: 'k1@outside.test', subject: 'Kickoff', body: 'Shall we?\nFrom the start, yes.', labels: 'Inbox,Work' },
        { id: 'k2@outside.test', subject: 'Re: Kickoff', inReplyTo: 'k1@outside.test', labels: 'Inbox,Work' },
        {
          id: 'mine@outside.test',
          subject: 'From me',
          from: `A <a@${DOMAIN}>`,
          date: 'Thu, 04 Jan 2024 09:30:00 +0000',
        },
      ]),
      Buffer.from(`From MAILER-DAEMON Wed Jan  3 10:00:00 2024\n${reportWithAttachment(`a@${DOMAIN}`)}\n`),
    ]),
  },
]);
const importB = await runImport(
  h,
  key,
  b.id,
  [
    {
      name: 'b.mbox',
      content: mbox([
        { id: 'b1@outside.test', subject: 'For b', to: `b@${DOMAIN}` },
        { id: 'b2@outside.test', subject: 'Binned', to: `b@${DOMAIN}`, labels: 'Trash' },
      ]),
    },
  ],
  { includeTrash: true },
);
await waitImport(h, key, importA.id);
await waitImport(h, key, importB.id);
const audience = await ok(h.request(key, 'POST', '/audiences', { name: 'Customers', description: 'Who pays' }));
await ok(
  h.request(key, 'POST', '/contacts', {
    email: 'ann@example.com',
    name: 'Ann; Smith',
    notes: 'Met at the fair,\nliked the demo',
    attributes: { plan: 'pro', since: '2024; "early" x^y' },
    audienceIds: [audience.id],
  }),
);
await ok(h.request(key, 'POST', '/contacts', { email: 'bob@example.com', audienceIds: [audience.id] }));
await ok(h.request(key, 'POST', '/contacts', { email: 'cy@example.com', name: 'Cy' }));
const template = await ok(
  h.request(key, 'POST', '/templates', { name: 'Welcome', subject: 'Hi', html: '<p>Hi there</p>', publish: true }),
);
await ok(h.request(key, 'PATCH', `/templates/${template.id}`, { html: '<p>Hi again</p>', publish: true }), 200);
await ok(h.request(key, 'PATCH', `/templates/${template.id}`, { subject: 'Hello', html: '<p>Draft</p>' }), 200);
// A blocks template: two published versions, a third restored from the first, then archived.
const digest = await ok(
  h.request(key, 'POST', '/templates', {
    name: 'Digest',
    description: 'Weekly',
    subject: 'Hello {{name}}',
    document: {
      body: [
        { kind: 'Heading', text: 'Hi {{name}}', level: 2 },
        { kind: 'Text', text: 'News.' },
      ],
    },
    props: [{ name: 'name', type: 'string', default: 'there' }],
    publish: true,
  }),
);
await ok(h.request(key, 'PATCH', `/templates/${digest.id}`, { subject: 'Digest {{name}}', publish: true }), 200);
const restored = await h.request(key, 'POST', `/templates/${digest.id}/versions/1/restore`);
if (restored.statusCode >= 300) throw new Error(restored.body);
const archived = await h.request(key, 'POST', `/templates/${digest.id}/archive`);
if (archived.statusCode >= 300) throw new Error(archived.body);
const work = (await ok(h.request(key, 'GET', `/labels?address=${encodeURIComponent(a.address)}`), 200)).data.find(
  (l: any) => l.name === 'Work',
);
await ok(
  h.request(key, 'POST', `/rules?address=${encodeURIComponent(a.address)}`, {
    name: 'Reports',
    conditions: [{ field: 'has_attachment', op: 'equals', value: 'true' }],
    actions: [{ type: 'label', value: work.id }],
  }),
);
const first = await exportZip(key);

// The move: the source lets its domain go, so the new workspace may add it.
for (const address of [a, b]) await ok(h.request(key, 'DELETE', `/addresses/${address.id}`), 200);
await ok(h.request(key, 'DELETE', `/domains/${domain.id}`), 200);
const file = path.join(dataDir, 'export.zip');
await writeFile(file, first);
const env = { ...process.env, DATABASE_URL: h.url, SECRETS_KEY: TEST_SECRETS_KEY, DATA_DIR: dataDir };
const out: string[] = [];
const err: string[] = [];
const code = await runCli(
  ['workspace', 'import', file, '--name', 'Restored', '--owner-email', 'new@example.com'],
  { out: (l) => out.push(l), err: (l) => err.push(l) },
  env,
);
t.test('the CLI restores a new workspace and says what it skipped', async (t) => {
  t.equal(code, 0, err.join('\n'));
  const result = JSON.parse(out[0]!);
  t.not(result.workspaceId, src.workspaceId);
  t.match(result.restored, {
    domains: 1,
    addresses: 2,
    labels: 1,
    messages: 6,
    labelledThreads: 1,
    contacts: 3,
    audiences: 1,
    audienceMembers: 2,
    templates: 2,
    templateVersions: 6,
    rules: 1,
  });
  t.same(
    result.skipped.map((s: any) => s.what),
    ['calendar/calendar.ics'],
  );
});

t.test('export → import → export: the same content, ids and instants aside', async (t) => {
  const result = JSON.parse(out[0]!);
  const second = await exportZip(result.apiKey);
  const [x, y] = [await normalised(first), await normalised(second)];
  t.same(y.counts, x.counts, 'the manifests count the same');
  t.same([...y.entries.keys()].sort(), [...x.entries.keys()].sort(), 'the same entries');
  for (const [name, entry] of x.entries) {
    const other = y.entries.get(name)!;
    t.equal(other.normalised, entry.normalised, `${name}: the same content`);
    // An entry that normalising leaves as it is in both zips is the same byte for byte: its manifest checksum.
    if (entry.asIs && other.asIs) t.equal(other.sha256, entry.sha256, `${name}: the manifest's checksum`);
  }
  t.ok([...x.entries.values()].filter((e) => e.asIs).length >= 5, 'some entries compared as they are');
});

t.test('a file that is not an export is refused, and writes nothing', async (t) => {
  const bad = path.join(dataDir, 'bad.zip');
  await writeFile(bad, 'not a zip at all');
  const errors: string[] = [];
  const refused = await runCli(
    ['workspace', 'import', bad, '--owner-email', 'x@example.com'],
    { out: () => {}, err: (l) => errors.push(l) },
    env,
  );
  t.equal(refused, 1);
  t.match(errors.join('\n'), /workspace import: Not a readable zip/);
  const usage = await runCli(['workspace', 'import', bad], { out: () => {}, err: () => {} }, env);
  t.equal(usage, 2, 'no owner email: a usage error');
});

t.test('hostile and damaged zips are refused by the import rules and the manifest', async (t) => {
  const system = h.system;
  const deps = {
    commands: system.commands,
    blobs: system.blobs,
    texts: new PostgresTextIndex(system.database.pool),
    lookups: mailboxLookups(system.readDb),
    domains: system.domains,
  };
  const workspaces = async () =>
    (await system.database.pool.query("SELECT count(*)::int AS n FROM es_events WHERE type = 'WorkspaceCreated'"))
      .rows[0].n;
  const restore = async (bytes: Buffer) => {
    const name = path.join(dataDir, `hostile-${Math.random().toString(36).slice(2)}.zip`);
    await writeFile(name, bytes);
    return restoreWorkspace(deps, name, { name: null, ownerEmail: 'x@example.com' });
  };
  const manifest = (entries: object[]) =>
    Buffer.from(JSON.stringify({ object: 'workspace_export', exportId: 'exp_x', entries }));
  const before = await workspaces();
  await t.rejects(
    restore(
      zip([
        { name: 'manifest.json', data: manifest([]) },
        { name: '../../evil.json', data: Buffer.from('[]') },
      ]),
    ),
    /relative path/,
    'zip-slip',
  );
  await t.rejects(
    restore(zip([{ name: 'link.json', data: Buffer.from('/etc/passwd'), mode: 0o120777 }])),
    /symbolic link/,
    'a symbolic link',
  );
  await t.rejects(
    restore(zip([{ name: 'mail/a@x.test/inbox.mbox', data: Buffer.alloc(20 * 1024 * 1024) }])),
    /past 100 times/,
    'a bomb: one entry unpacking past the ratio',
  );
  await t.rejects(
    restore(zip([{ name: 'labels/labels.json', data: Buffer.from('[]') }])),
    /no manifest\.json: it is no workspace export/,
    'no manifest',
  );
  await t.rejects(
    restore(zip([{ name: 'manifest.json', data: Buffer.from(JSON.stringify({ object: 'list', entries: [] })) }])),
    /not the manifest of a workspace export/,
    'a manifest of something else',
  );
  await t.rejects(
    restore(
      zip([
        { name: 'manifest.json', data: manifest([]) },
        { name: 'labels/labels.json', data: Buffer.from('[]') },
      ]),
    ),
    /labels\/labels\.json is not in the manifest/,
    'an entry the manifest does not list',
  );
  await t.rejects(
    restore(
      zip([
        { name: 'manifest.json', data: manifest([{ path: 'labels/labels.json', bytes: 2, sha256: '0'.repeat(64) }]) },
        { name: 'labels/labels.json', data: Buffer.from('[]') },
      ]),
    ),
    /does not match the manifest/,
    'an entry other than its manifest says',
  );
  t.equal(await workspaces(), before, 'nothing written for any of them');
});

/** What the restore could have written: workspaces with events, and rows of the workspaces read model. */
async function workspaceCounts() {
  const events = await h.system.database.pool.query(
    "SELECT count(DISTINCT metadata->>'workspaceId')::int AS n FROM es_events",
  );
  const rows = await h.system.readDb
    .selectFrom('workspaces')
    .select((e) => e.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return { withEvents: events.rows[0].n as number, readModel: Number(rows.n) };
}

/**
 * The first export again as a zip of its entries (manifest order, the manifest last) after `change`
 * edits them; the manifest is written as it is unless `change` edits it too.
 */
async function alteredExport(change: (entries: Map<string, Buffer>, manifest: any) => void): Promise<string> {
  const dir = await mkdtemp(path.join(dataDir, 'altered-'));
  await writeFile(path.join(dir, 'export.zip'), first);
  await run('unzip', ['-q', path.join(dir, 'export.zip'), '-d', path.join(dir, 'x')]);
  const manifest = JSON.parse((await readFile(path.join(dir, 'x', 'manifest.json'))).toString());
  const entries = new Map<string, Buffer>();
  for (const e of manifest.entries as { path: string }[])
    entries.set(e.path, await readFile(path.join(dir, 'x', e.path)));
  change(entries, manifest);
  const file = path.join(dir, 'altered.zip');
  await writeFile(
    file,
    zip([
      ...[...entries].map(([name, data]) => ({ name, data })),
      { name: 'manifest.json', data: Buffer.from(JSON.stringify(manifest)) },
    ]),
  );
  return file;
}

const importCli = async (file: string) => {
  const errors: string[] = [];
  const code = await runCli(
    ['workspace', 'import', file, '--owner-email', 'late@example.com'],
    { out: () => {}, err: (l) => errors.push(l) },
    env,
  );
  return { code, err: errors.join('\n') };
};

t.test('an export whose last mail entry was altered is refused before anything is written', async (t) => {
  const file = await alteredExport((entries) => {
    const last = [...entries.keys()].filter((n) => n.endsWith('.mbox')).at(-1)!;
    const data = entries.get(last)!;
    // A letter of the last message's body changed: the same size, so only the manifest's sha256 tells.
    const at = data.lastIndexOf('e');
    t.ok(at > 0, `${last} has a letter to change`);
    data[at] = 'E'.charCodeAt(0);
  });
  const before = await workspaceCounts();
  const { code, err } = await importCli(file);
  t.equal(code, 1, err);
  t.match(err, /workspace import: mail\/[^ ]+\.mbox does not match the manifest's sha256/);
  t.notMatch(err, /restoring into/, 'no workspace was made');
  t.same(await workspaceCounts(), before, 'no new workspace in the event store or the read model');
});

t.test('an entry the manifest names but the zip lacks is refused before anything is written', async (t) => {
  const file = await alteredExport((entries) => {
    t.ok(entries.delete('rules/rules.json'), 'the export has rules to leave out');
  });
  const before = await workspaceCounts();
  const { code, err } = await importCli(file);
  t.equal(code, 1, err);
  t.match(err, /workspace import: rules\/rules\.json is in the manifest but not in the archive/);
  t.same(await workspaceCounts(), before, 'no new workspace in the event store or the read model');
});

t.test('a restore that stops after the check names the workspace it leaves', async (t) => {
  // Rules that check (their sha256 in the manifest) but are no list: the restore stops at them, last.
  const file = await alteredExport((entries, manifest) => {
    const rules = Buffer.from('{}');
    entries.set('rules/rules.json', rules);
    const listed = manifest.entries.find((e: any) => e.path === 'rules/rules.json');
    listed.bytes = rules.length;
    listed.sha256 = createHash('sha256').update(rules).digest('hex');
  });
  const before = await workspaceCounts();
  const { code, err } = await importCli(file);
  t.equal(code, 1, err);
  const left = /stopped after creating workspace (\S+): /.exec(err)?.[1];
  t.ok(left, err);
  t.match(err, new RegExp(`restoring into the new workspace ${left}\n`), 'said as soon as it existed');
  t.match(err, `keys create --workspace ${left} --scopes all`);
  t.equal((await workspaceCounts()).withEvents, before.withEvents + 1, 'that workspace, and no other');
  const kept = await h.system.database.pool.query(
    "SELECT count(*)::int AS n FROM es_events WHERE metadata->>'workspaceId' = $1 AND type = 'TemplateCreated'",
    [left],
  );
  t.equal(kept.rows[0].n, 2, 'it keeps what was restored before the rules: the templates');
});

/** Keys holding the instant a row was written: the restore's, not the source's. */
const INSTANTS = new Set(['createdAt', 'updatedAt', 'joinedAt', 'publishedAt']);
const ID = /^[a-z]{2,6}_[0-9a-z]{16,}$/;

/**
 * An export's entries under stable names with their content made comparable: ids become what
 * they name (a label's address and name, a template's, an audience's or contact's), any other id
 * `<id>`, instants of writing `<instant>`; lists ordered by id (the contacts, audience members,
 * the messages of an mbox, ordered by thread id) sorted by content instead.
 */
async function normalised(bytes: Buffer) {
  const dir = await mkdtemp(path.join(dataDir, 'zip-'));
  await writeFile(path.join(dir, 'export.zip'), bytes);
  await run('unzip', ['-q', path.join(dir, 'export.zip'), '-d', path.join(dir, 'x')]);
  const zip = { read: (name: string) => readFile(path.join(dir, 'x', name)) };
  const manifest = JSON.parse((await zip.read('manifest.json')).toString());
  const names = new Map<string, string>();
  const json = async (name: string) => JSON.parse((await zip.read(name)).toString());
  for (const l of await json('labels/labels.json')) names.set(l.id, `label:${l.address}/${l.name}`);
  for (const e of manifest.entries as { path: string }[]) {
    if (/^templates\/[^/]+\/template\.json$/.test(e.path)) {
      const tpl = await json(e.path);
      names.set(tpl.id, `template:${tpl.name}`);
    }
    if (e.path.startsWith('audiences/')) {
      const aud = await json(e.path);
      names.set(aud.id, `audience:${aud.name}`);
      for (const m of aud.members) names.set(m.contactId, `contact:${m.email}`);
    }
  }
  const value = (v: unknown, key?: string): unknown => {
    if (typeof v === 'string')
      return key && INSTANTS.has(key) ? '<instant>' : (names.get(v) ?? (ID.test(v) ? '<id>' : v));
    if (Array.isArray(v)) return v.map((x) => value(x));
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, value(x, k)]));
    return v;
  };
  const entries = new Map<string, { normalised: string; sha256: string; asIs: boolean }>();
  for (const e of manifest.entries as { path: string; sha256: string }[]) {
    const raw = (await zip.read(e.path)).toString();
    let text = raw;
    if (e.path.endsWith('.json')) {
      const parsed = value(JSON.parse(raw)) as any;
      if (Array.isArray(parsed?.members)) parsed.members.sort((p: any, q: any) => (p.email < q.email ? -1 : 1));
      text = JSON.stringify(parsed, null, 2);
      if (text === JSON.stringify(JSON.parse(raw), null, 2)) text = raw;
    } else if (e.path.endsWith('.vcf'))
      text = raw
        .split(/(?=BEGIN:VCARD\r\n)/)
        .map((card) => card.replace(/^(UID|REV):.*\r\n/gm, ''))
        .sort()
        .join('');
    else if (e.path.endsWith('.mbox'))
      text = raw
        .split(/(?<=\n\n)(?=From )/)
        .sort()
        .join('');
    const stable = e.path.replace(/^(audiences|templates)\/([^/.]+)/, (_, folder, id) => `${folder}/${names.get(id)}`);
    entries.set(stable, {
      normalised: createHash('sha256').update(text).digest('hex'),
      sha256: e.sha256,
      asIs: text === raw,
    });
  }
  return { counts: manifest.counts, entries };
}
