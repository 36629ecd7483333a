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

  t.test('sends: newest first, by version, paged with sends in between', async (t) => {
    const tpl = await make({ name: 'Paged', publish: true, ...blocks('Paged {{name}}') });
    const sent: string[] = [];
    const sendOne = async (body: object = base) => {
      const res = await sendWith(tpl.id, body);
      t.equal(res.statusCode, 201, res.body);
      sent.push(res.json().id);
      return res.json();
    };
    for (let i = 0; i < 3; i++) await sendOne();
    const republished = await h.request(ws.apiKey, 'PATCH', `/templates/${tpl.id}`, {
      subject: 'Second {{name}}',
      publish: true,
    });
    t.equal(republished.json().publishedVersion, 2);
    await sendOne({ ...base, from: 'b@example.com' });
    const viaEmails = await h.request(ws.apiKey, 'POST', '/emails', { ...base, template: { id: tpl.slug } });
    t.equal(viaEmails.statusCode, 201);
    sent.push(viaEmails.json().id);
    const list = (query: string, key = ws.apiKey) => h.request(key, 'GET', `/templates/${tpl.id}/sends${query}`);

    const first = await list('?limit=2');
    t.equal(first.statusCode, 200, first.body);
    t.same(
      first.json().data.map((e: { id: string }) => e.id),
      [sent[4], sent[3]],
    );
    t.equal(first.json().hasMore, true);
    t.match(first.json().data[0], {
      object: 'email',
      template: { id: tpl.id },
      recipients: [{ email: 'x@example.org' }],
    });
    const later = await sendOne();
    const rest = await list(`?limit=2&cursor=${first.json().nextCursor}`);
    const last = await list(`?limit=2&cursor=${rest.json().nextCursor}`);
    const seen = [...first.json().data, ...rest.json().data, ...last.json().data].map((e: { id: string }) => e.id);
    t.same(seen, [sent[4], sent[3], sent[2], sent[1], sent[0]], 'each once, the send in between not inside');
    t.equal(last.json().hasMore, false);
    t.equal((await list('?limit=1')).json().data[0].id, later.id, 'the new one leads a new walk');

    const v1 = await list('?version=1&limit=100');
    t.same(
      v1.json().data.map((e: { id: string }) => e.id),
      [sent[2], sent[1], sent[0]],
    );
    t.equal((await list('?version=2')).json().data.length, 3);
    t.same(errorOf(await list('?version=9')), [422, 'template_version_not_found', 'version']);
    t.same(errorOf(await list('?limit=101')), [422, 'invalid_parameter', 'limit']);
    t.same(errorOf(await list('?cursor=nope')), [400, 'invalid_cursor', 'cursor']);
    t.same(errorOf(await list(`?version=1&cursor=${first.json().nextCursor}`)), [400, 'invalid_cursor', 'cursor']);

    const onB = await keyWith(ws, { scopes: ['emails:read'], addressAllowlist: ['b@example.com'] });
    t.same(
      (await list('', onB)).json().data.map((e: { id: string }) => e.id),
      [sent[3]],
      'a narrowed key sees the mail of what it reaches',
    );
    const testKey = await keyWith(ws, { scopes: ['emails:read', 'emails:send'], mode: 'test' });
    t.same((await list('', testKey)).json().data, [], 'test mode holds none of them');
    const inTest = await sendWith(tpl.id, base, testKey);
    t.same(
      (await list('', testKey)).json().data.map((e: { id: string }) => e.id),
      [inTest.json().id],
    );
    const reader = await keyWith(ws, { scopes: ['templates:read'] });
    t.same(errorOf(await list('', reader)), [403, 'insufficient_scope', null]);
    t.same(errorOf(await list('', other.ws.apiKey)), [404, 'resource_not_found', 'id'], "another workspace's");
  });
});
