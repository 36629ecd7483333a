import t from 'tap';
import { RECIPIENTS_MAX } from '../../domain/emails/rules.ts';
import { errorOf } from '../support/domains.ts';
import { startSendingApp, storedMessage } from '../support/emails.ts';

const blocks = (subject: string) => ({
  subject,
  document: {
    body: [
      { kind: 'Heading', text: 'Hi {{name}}', level: 2 },
      { kind: 'Text', text: 'Welcome aboard.' },
    ],
  },
  props: [{ name: 'name', type: 'string', default: 'there' }],
});

t.test('template mail', async (t) => {
  const { h, setUp, keyWith } = await startSendingApp(t);
  const { ws } = await setUp('example.com');
  const other = await setUp('example.net');
  const make = async (body: object, key = ws.apiKey) => {
    const res = await h.request(key, 'POST', '/templates', body);
    if (res.statusCode !== 201) throw new Error(res.body);
    return res.json();
  };
  const live = await make({ name: 'Welcome', publish: true, ...blocks('Hello {{name}}') });
  const base = { from: 'Jane <a@example.com>', to: 'x@example.org' };
  const sendWith = (id: string, body: object, key = ws.apiKey) => h.request(key, 'POST', `/templates/${id}/send`, body);

  t.test('send: the published version with its props; the refusals of a send', async (t) => {
    const res = await sendWith(live.id, { ...base, props: { name: 'Ann' } });
    t.equal(res.statusCode, 201, res.body);
    t.match(res.json(), { object: 'email', subject: 'Hello Ann', template: { id: live.id }, source: 'api' });
    const mail = await storedMessage(h, res.json().id, ws.workspaceId);
    t.match(mail.html, /Hi Ann/);
    t.match(mail.text, /Hi Ann/);
    const bySlug = await sendWith('welcome', { ...base, subject: 'Own subject' });
    t.equal(bySlug.statusCode, 201, bySlug.body);
    t.match(bySlug.json(), { subject: 'Own subject', template: { id: live.id } });

    const draft = await make({ name: 'Draft only', ...blocks('Draft') });
    t.same(errorOf(await sendWith(draft.id, base)), [422, 'template_not_published', 'id']);
    const old = await make({ name: 'Old one', publish: true, ...blocks('Old') });
    t.equal((await h.request(ws.apiKey, 'POST', `/templates/${old.id}/archive`)).statusCode, 200);
    t.same(errorOf(await sendWith(old.id, base)), [422, 'template_archived', 'id']);
    t.same(errorOf(await sendWith(live.id, { ...base, props: { nope: 1 } })), [
      422,
      'unknown_template_prop',
      'props.nope',
    ]);
    t.same(errorOf(await sendWith(live.id, { ...base, text: 'x' })), [422, 'unknown_parameter', 'text']);
    t.same(errorOf(await sendWith(live.id, { ...base, template: { id: live.id } })), [
      422,
      'unknown_parameter',
      'template',
    ]);
    t.same(errorOf(await sendWith(live.id, { ...base, from: 'a@example.net' })), [
      403,
      'from_address_forbidden',
      'from',
    ]);
    t.same(errorOf(await sendWith('tpl_000000000000000000000000', base)), [404, 'resource_not_found', 'id']);
    const foreign = await make({ name: 'Foreign', publish: true, ...blocks('F') }, other.ws.apiKey);
    t.same(errorOf(await sendWith(foreign.id, base)), [404, 'resource_not_found', 'id'], "another workspace's");

    const recipients = (n: number) => Array.from({ length: n }, (_, i) => `r${i}@example.org`);
    t.equal((await sendWith(live.id, { ...base, to: recipients(RECIPIENTS_MAX) })).statusCode, 201, 'at the limit');
    t.same(errorOf(await sendWith(live.id, { ...base, to: recipients(RECIPIENTS_MAX + 1) })), [
      422,
      'too_many_recipients',
      'to',
    ]);
  });

  t.test('send: scopes, narrowed keys and test keys', async (t) => {
    const reader = await keyWith(ws, { scopes: ['templates:read', 'templates:write'] });
    t.same(errorOf(await sendWith(live.id, base, reader)), [403, 'insufficient_scope', null]);
    const sender = await keyWith(ws, { scopes: ['emails:send'] });
    t.equal((await sendWith(live.id, base, sender)).statusCode, 201, 'emails:send alone is enough');
    const onB = await keyWith(ws, { scopes: ['emails:send'], addressAllowlist: ['b@example.com'] });
    t.same(errorOf(await sendWith(live.id, base, onB)), [403, 'from_address_forbidden', 'from']);
    t.equal((await sendWith(live.id, { ...base, from: 'b@example.com' }, onB)).statusCode, 201);
    const testKey = await keyWith(ws, { scopes: ['emails:send', 'emails:read'], mode: 'test' });
    const inTest = await sendWith(live.id, base, testKey);
    t.equal(inTest.statusCode, 201, inTest.body);
    t.match(inTest.json(), { mode: 'test', template: { id: live.id } });
  });
});
