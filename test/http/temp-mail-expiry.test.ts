import t from 'tap';
import { serve } from '../../system.ts';
import { startTestApp } from '../support/app.ts';
import { compose, startTestInbound } from '../support/inbound.ts';
import { eventually } from '../support/receiver.ts';

/**
 * The disposable inboxes' expiry as the running service does it (the retention loop `openSystem`
 * starts, with a short lifetime and tick), and the create on a service without a disposable domain.
 */
const DOMAIN = 'disposable.example.net';
const h = await startTestApp(t, { tempMail: { domain: DOMAIN, lifetimeMs: 3000, retentionEveryMs: 200 } });
const mx = await startTestInbound(t, h.system);

t.test('the running service deletes an inbox and its mail at expiry', async (t) => {
  const inbox = (await h.app.inject({ method: 'POST', url: '/temp-mail/inboxes' })).json();
  t.equal(Date.parse(inbox.expiresAt) - Date.parse(inbox.createdAt), 3000);
  await mx.send({ from: 'a@outside.test', to: [inbox.address] }, await compose({ to: inbox.address }));
  const pool = h.system.database.pool;
  const count = async (sql: string) => Number((await pool.query(sql, [inbox.id])).rows[0].n);
  t.equal(await count('SELECT count(*) AS n FROM temp_inbox_messages WHERE inbox_id = $1'), 1);
  await eventually(async () => {
    const left =
      (await count('SELECT count(*) AS n FROM temp_inboxes WHERE id = $1')) +
      (await count('SELECT count(*) AS n FROM temp_inbox_messages WHERE inbox_id = $1')) +
      (await count("SELECT count(*) AS n FROM es_events WHERE stream_id = 'service.temp-inbox-' || $1"));
    return left === 0;
  });
  const read = await h.request(inbox.token, 'GET', `/temp-mail/inboxes/${inbox.id}/messages`);
  t.equal(read.statusCode, 404);
});

t.test('without a disposable domain the create is 409 temp_mail_not_configured', async (t) => {
  const app = await serve({ ...h.system, tempMail: { domain: null, lifetimeMs: 1500 } });
  t.teardown(() => app.close());
  const res = await app.inject({ method: 'POST', url: '/temp-mail/inboxes' });
  t.equal(res.statusCode, 409);
  t.match(res.json().error, { type: 'conflict_error', code: 'temp_mail_not_configured' });
});
