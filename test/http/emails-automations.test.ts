import t from 'tap';
import { sendEmail } from '../../commands/emails/handlers.ts';
import { eventually } from '../support/receiver.ts';
import { startSendingApp } from '../support/emails.ts';

t.test("automations' send steps go through sendEmail; the outcome shows on the send", async (t) => {
  const { h, setUp } = await startSendingApp(t, { automations: { minuteMs: 100, pollMs: 20, staleAfterMs: 300 } });
  const { ws } = await setUp('example.com');
  const tpl = await h.request(ws.apiKey, 'POST', '/templates', {
    name: 'Welcome Mail',
    publish: true,
    subject: 'Welcome {{name}}',
    document: { body: [{ kind: 'Text', text: 'Hi {{name}}, you are on {{plan}}.' }] },
    props: [
      { name: 'name', type: 'string', default: 'there' },
      { name: 'plan', type: 'string', default: 'free' },
    ],
  });
  t.equal(tpl.statusCode, 201, tpl.body);
  const automation = async (steps: object[]) => {
    const res = await h.request(ws.apiKey, 'POST', '/automations', {
      name: 'A',
      trigger: { event: 'signed_up', filters: [] },
      steps,
    });
    t.equal(res.statusCode, 201, res.body);
    return res.json();
  };
  const good = await automation([
    { type: 'send', template: 'welcome-mail', from: 'Team <a@example.com>', data: { plan: 'pro' } },
  ]);
  const noFrom = await automation([{ type: 'send', template: 'welcome-mail' }]);
  const disabled = await automation([{ type: 'send', template: 'welcome-mail', from: 'off@example.com' }]);

  const event = await h.request(ws.apiKey, 'POST', '/events', {
    name: 'signed_up',
    email: 'cy@example.org',
    createContact: true,
    properties: { name: 'Cy', source: 'ad' },
  });
  t.equal(event.statusCode, 201, event.body);

  const sendsOf = async (id: string) =>
    (await h.request(ws.apiKey, 'GET', `/automations/${id}/sends`)).json().data as Record<string, any>[];
  await eventually(async () => (await sendsOf(good.id))[0]?.status === 'sent');
  const [sent] = await sendsOf(good.id);
  t.match(sent, { status: 'sent', emailId: /^em_[0-9a-f]{24}$/, error: null, from: 'Team <a@example.com>' });
  const email = (await h.request(ws.apiKey, 'GET', `/emails/${sent!.emailId}`)).json();
  t.match(email, {
    subject: 'Welcome Cy',
    source: 'automation',
    stream: 'broadcast',
    from: { address: 'a@example.com', name: 'Team' },
    template: { id: tpl.json().id },
    // Delivery runs at once beside the test: the recipient may be past `queued` already.
    recipients: [{ email: 'cy@example.org', status: /^(queued|delivered)$/ }],
  });

  await eventually(async () => (await sendsOf(noFrom.id))[0]?.status === 'refused');
  t.match((await sendsOf(noFrom.id))[0], { status: 'refused', emailId: null, error: { code: 'invalid_parameter' } });
  await eventually(async () => (await sendsOf(disabled.id))[0]?.status === 'refused');
  t.match((await sendsOf(disabled.id))[0], { error: { code: 'address_disabled' } });

  // The touch is a command of its own after the acceptance, which the send's status already shows.
  const contact = await eventually(async () => {
    const c = (await h.request(ws.apiKey, 'GET', '/contacts/cy@example.org')).json();
    return c.lastSeenAt && c;
  });
  t.ok(contact.lastSeenAt, 'the send touched the contact');

  // A process that died after a step's transaction committed and before it sent leaves the request
  // unsent on a run that may never move again (here: completed). Another process sends it.
  const { rows } = await h.system.database.pool.query(
    `INSERT INTO automation_sends (id, workspace_id, automation_id, run_id, contact_id, email, template, subject, data, from_address, created_at)
     SELECT 'asr_00000000000000000000dead', workspace_id, automation_id, run_id, contact_id, email, template, subject, data, from_address,
            now() - interval '1 hour'
     FROM automation_sends WHERE automation_id = $1 RETURNING run_id`,
    [good.id],
  );
  t.equal(rows.length, 1);
  const run = await h.system.database.pool.query('SELECT status FROM automation_runs WHERE id = $1', [rows[0].run_id]);
  t.equal(run.rows[0].status, 'completed', 'the run will not move again');
  await eventually(async () => (await sendsOf(good.id)).every((s) => s.status === 'sent'));
  const orphan = (await sendsOf(good.id)).find((s) => s.emailId === 'em_00000000000000000000dead');
  t.match(orphan, { status: 'sent', error: null });
  t.equal((await h.request(ws.apiKey, 'GET', '/emails/em_00000000000000000000dead')).json().source, 'automation');
});

t.test('a repeated send touches its contacts again: the first may have ended before it did', async (t) => {
  const { h, setUp } = await startSendingApp(t);
  const { ws } = await setUp('example.com');
  const send = () =>
    sendEmail(
      { commands: h.system.commands, sending: h.system.sending },
      {
        actor: { workspaceId: ws.workspaceId, kind: 'system', id: null },
        mode: 'live',
        reach: null,
        source: 'automation',
      },
      {
        emailId: 'em_0000000000000000000000a1',
        from: 'a@example.com',
        to: 'dee@example.org',
        subject: 'Hi',
        text: 'Hi',
      },
      new Date(),
    );
  const first = await send();
  t.equal(first.replayed, false);
  // Not a contact when the mail was accepted, so nothing was touched; a contact by the repeat.
  const made = await h.request(ws.apiKey, 'POST', '/contacts', { email: 'dee@example.org' });
  t.equal(made.statusCode, 201, made.body);
  t.equal(made.json().lastSeenAt, null);
  const again = await send();
  t.equal(again.replayed, true);
  const contact = (await h.request(ws.apiKey, 'GET', '/contacts/dee@example.org')).json();
  t.equal(contact.lastSeenAt, first.email.acceptedAt, 'touched at the acceptance, by the repeat');
});
