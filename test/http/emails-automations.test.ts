import t from 'tap';
import { eventually } from '../support/receiver.ts';
import { startSendingApp } from '../support/emails.ts';

t.test("automations' send steps go through sendEmail; the outcome shows on the send", async (t) => {
  const { h, setUp } = await startSendingApp(t, { automations: { minuteMs: 100, pollMs: 20 } });
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
    recipients: [{ email: 'cy@example.org', status: 'queued' }],
  });

  await eventually(async () => (await sendsOf(noFrom.id))[0]?.status === 'refused');
  t.match((await sendsOf(noFrom.id))[0], { status: 'refused', emailId: null, error: { code: 'invalid_parameter' } });
  await eventually(async () => (await sendsOf(disabled.id))[0]?.status === 'refused');
  t.match((await sendsOf(disabled.id))[0], { error: { code: 'address_disabled' } });

  const contact = (await h.request(ws.apiKey, 'GET', '/contacts/cy@example.org')).json();
  t.ok(contact.lastSeenAt, 'the send touched the contact');
});
