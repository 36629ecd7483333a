import t from 'tap';
import { errorOf } from '../support/domains.ts';
import { startSendingApp } from '../support/emails.ts';
import { outsideDomains, startTestInbound } from '../support/inbound.ts';
import { eventually } from '../support/receiver.ts';
import { replyTemplate } from '../support/rules.ts';

/**
 * A catch-all's `reply` rule, end to end: mail over SMTP to a local part no address holds, the
 * automatic reply from the address it was sent to arriving at the sender's (loopback) MX, once
 * per sender in 24 hours; and that only the rule run may send from such an address.
 */
const { h, dns, setUp, mx: recipients } = await startSendingApp(t);
const outside = await outsideDomains(dns);
const mx = await startTestInbound(t, h.system);
const DOMAIN = 'rules-catchall.example.com';
const ANY = `*@${DOMAIN}`;
const { ws, domain } = await setUp(DOMAIN);

type Run = { matched: { ruleId: string; actions: { type: string; outcome: string; detail: string | null }[] }[] };
async function runsOf(ruleId: string): Promise<Run[]> {
  const { rows } = await h.system.database.pool.query(
    'SELECT id FROM rule_runs WHERE workspace_id = $1 AND $2 = ANY(rule_ids) ORDER BY at, id',
    [ws.workspaceId, ruleId],
  );
  return Promise.all(
    rows.map(async ({ id }: { id: string }) => {
      const events = await h.system.store.readStream(`ws-${ws.workspaceId}.rule-run-${id}`);
      return events.find((e) => e.type === 'RuleRunRecorded')!.data as Run;
    }),
  );
}

t.test('a catch-all replies from the address the mail was sent to, once per sender in 24 hours', async (t) => {
  const on = await h.request(ws.apiKey, 'PATCH', `/domains/${domain.id}`, { catchAll: true });
  t.equal(on.statusCode, 200, on.body);
  const template = await replyTemplate(h, ws.apiKey, 'We have your message');
  const signature = await h.request(ws.apiKey, 'POST', '/signatures', {
    address: ANY,
    name: 'Team',
    html: '<p>The catch-all team</p>',
    isReplyDefault: true,
  });
  t.equal(signature.statusCode, 201, signature.body);
  const rule = await h.request(ws.apiKey, 'POST', `/rules?address=${encodeURIComponent(ANY)}`, {
    name: 'Acknowledge',
    conditions: [{ field: 'envelope_from', op: 'matches', value: '*@outside.test' }],
    actions: [{ type: 'reply', value: template.id }],
  });
  t.equal(rule.statusCode, 201, rule.body);
  const ruleId = rule.json().id;

  // A local part no address holds, with a subaddress and capitals: the reply comes from `sales@`.
  const to = `Sales+Spring@${DOMAIN}`;
  await mx.send(
    { from: 'olga@outside.test', to: [to] },
    await outside.signed({ to, subject: 'A question', messageId: '<question1@outside.test>' }),
  );
  const replies = await eventually(async () => {
    const got = recipients.received.filter((m) => m.rcptTo.includes('olga@outside.test'));
    return got.length > 0 && got;
  }, 20_000);
  const reply = replies[0]!.raw.toString();
  t.match(reply, new RegExp(`^From: sales@${DOMAIN.replace(/\./g, '\\.')}\\r?$`, 'm'), 'from the address mailed');
  t.match(reply, /Auto-Submitted: auto-replied/i);
  t.match(reply, /In-Reply-To: <question1@outside\.test>/);
  t.match(reply, /The catch-all team/, "the catch-all's reply signature");

  const { rows } = await h.system.database.pool.query(
    'SELECT thread_id FROM thread_messages WHERE workspace_id = $1 AND header_id = $2',
    [ws.workspaceId, 'question1@outside.test'],
  );
  const thread = await eventually(async () => {
    const read = (await h.request(ws.apiKey, 'GET', `/threads/${rows[0].thread_id}`)).json();
    return read.messages?.length === 2 && read;
  }, 20_000);
  t.match(
    thread,
    { address: ANY, messages: [{ direction: 'received' }, { direction: 'sent' }] },
    "the reply is filed in the catch-all, in the question's thread",
  );

  // The same sender to another local part of the same catch-all: one mailbox, so no second reply.
  const again = `info@${DOMAIN}`;
  await mx.send(
    { from: 'olga@outside.test', to: [again] },
    await outside.signed({ to: again, subject: 'Another question', messageId: '<question2@outside.test>' }),
  );
  await eventually(async () => (await h.request(ws.apiKey, 'GET', `/rules/${ruleId}`)).json().matchCount === 2, 20_000);
  const runs = await runsOf(ruleId);
  t.match(
    runs.map((r) => r.matched[0]!.actions),
    [[{ type: 'reply', outcome: 'done' }], [{ type: 'reply', outcome: 'skipped', detail: /24 hours/ }]],
    'one automatic reply per sender and mailbox in 24 hours',
  );
  t.equal(recipients.received.filter((m) => m.rcptTo.includes('olga@outside.test')).length, 1, 'olga got one reply');
  const { rows: sent } = await h.system.database.pool.query(
    'SELECT from_email, from_address_id, source FROM emails WHERE workspace_id = $1 AND source = $2',
    [ws.workspaceId, 'rule'],
  );
  t.same(sent, [{ from_email: `sales@${DOMAIN}`, from_address_id: `catchall-${domain.id}`, source: 'rule' }]);
});

t.test("an API key still cannot send from a catch-all's local part", async (t) => {
  const res = await h.request(ws.apiKey, 'POST', '/emails', {
    from: `sales@${DOMAIN}`,
    to: 'olga@outside.test',
    subject: 'Hello',
    text: 'Hi',
  });
  t.same(errorOf(res), [403, 'from_address_forbidden', 'from']);
});
