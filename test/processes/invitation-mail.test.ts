import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { createWorkspace } from '../../commands/workspaces/handlers.ts';
import { openSystem, serve, type System, type SystemOptions } from '../../system.ts';
import { freshDatabase } from '../support/database.ts';
import { eventually } from '../support/receiver.ts';
import { TEST_SECRETS_KEY } from '../support/secrets.ts';
import { startSmtpServer } from '../support/smtp.ts';

const PUBLIC = 'https://mail.example.net';

t.test('across a restart: a mail sent is not sent again, a mail still owed is sent once', async (t) => {
  const url = await freshDatabase(t);
  const smtp = await startSmtpServer(t);
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'wms-test-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const options: SystemOptions = {
    secretsKey: TEST_SECRETS_KEY,
    dataDir,
    smtpUrl: smtp.url,
    forwardConsent: { publicUrl: PUBLIC },
    invitationMails: { pollMs: 20, retryMs: [100] },
    domainChecks: { pollMs: 3_600_000 },
  };
  const to = (email: string) => smtp.mails.filter((m) => m.to.includes(email));
  const invite = async (system: System, apiKey: string, email: string) => {
    const app = await serve(system);
    try {
      const auth = { authorization: `Bearer ${apiKey}` };
      const roles = (await app.inject({ method: 'GET', url: '/roles', headers: auth })).json();
      const roleId = roles.data.find((r: { builtin: string | null }) => r.builtin === 'viewer').id;
      const res = await app.inject({ method: 'POST', url: '/members', headers: auth, payload: { email, roleId } });
      if (res.statusCode !== 201) throw new Error(`invite: ${res.statusCode} ${res.body}`);
      return res.json().id as string;
    } finally {
      await app.close();
    }
  };

  const first = await openSystem(url, options);
  const ws = await createWorkspace(first.commands, { name: 'Restart', ownerEmail: 'owner@example.com' });
  await invite(first, ws.apiKey, 'ann@example.org');
  await eventually(async () => to('ann@example.org').length === 1);
  // The next one the mail server refuses until the process is gone.
  smtp.accept = () => false;
  const bob = await invite(first, ws.apiKey, 'bob@example.org');
  await eventually(async () => smtp.offered() >= 3);
  await first.close();
  t.equal(to('bob@example.org').length, 0, 'nothing for bob before the restart');

  smtp.accept = () => true;
  const second = await openSystem(url, options);
  t.teardown(() => second.close());
  const mail = await eventually(async () => to('bob@example.org')[0]);
  t.match(mail.text, new RegExp(`${PUBLIC}/invitations/${bob}\\.`));
  // The second process has claimed what was due at its start and mailed it; give it time to do more.
  await new Promise((r) => setTimeout(r, 500));
  t.equal(to('ann@example.org').length, 1, 'ann, mailed before the restart, is not mailed again');
  t.equal(to('bob@example.org').length, 1, 'bob is mailed once');
  const { rows } = await second.database.pool.query(
    'SELECT email, sent_at IS NOT NULL AS sent FROM invitation_mails ORDER BY position',
  );
  t.same(rows, [
    { email: 'ann@example.org', sent: true },
    { email: 'bob@example.org', sent: true },
  ]);
});
