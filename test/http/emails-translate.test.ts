import t from 'tap';
import { secondsToNextDay } from '../../domain/ai-actions/decide.ts';
import { TRANSLATED_BATCH_MAX, TRANSLATION_MAX } from '../../domain/emails/translation.ts';
import { startAiServer, translator, type ChatCall, type ChatReply } from '../support/ai-server.ts';
import { broadcastTemplate } from '../support/broadcasts.ts';
import { errorOf } from '../support/domains.ts';
import { startSendingApp, storedMessage } from '../support/emails.ts';

t.test('POST /emails with translate, through the AI port', async (t) => {
  const ai = await startAiServer(t);
  const { h, setUp, keyWith } = await startSendingApp(t, {
    ai: {
      endpoint: { baseUrl: ai.baseUrl, apiKey: ai.apiKey, model: 'translator-1', timeoutMs: 1000 },
      dailyActions: 100,
    },
  });
  ai.reply = translator;
  const { ws } = await setUp('example.com');
  const send = (body: object, key = ws.apiKey) => h.request(key, 'POST', '/emails', body);
  const base = { from: 'Jane <a@example.com>', to: 'x@example.org', subject: 'Hello', text: 'Good morning' };
  const spent = async (workspaceId = ws.workspaceId) => {
    const events = await h.system.store.readStream(
      `ws-${workspaceId}.ai-actions-${new Date().toISOString().slice(0, 10)}`,
    );
    return (events.at(-1)?.data as { used?: number } | undefined)?.used ?? 0;
  };
  const listed = async () => (await h.request(ws.apiKey, 'GET', '/emails?limit=100')).json().data.length;
  const noSecret = (res: { body: string }) => t.notMatch(res.body, ai.apiKey, 'the API key is never in an answer');

  t.test('subject, text and html are translated at acceptance; the signature is not', async (t) => {
    const sig = await h.request(ws.apiKey, 'POST', '/signatures', {
      address: 'a@example.com',
      name: 'Work',
      html: '<p>Jane Doe</p>',
    });
    const before = await spent();
    const res = await send({
      ...base,
      html: '<p>Good <b>morning</b>, {{ not a prop }}</p>',
      signatureId: sig.json().id,
      translate: { to: 'pt-br' },
    });
    t.equal(res.statusCode, 201, res.body);
    noSecret(res);
    t.equal(res.json().subject, '[pt-BR] Hello');
    t.equal(await spent(), before + 1, 'one AI action');
    const call = ai.calls.at(-1)!;
    t.equal(call.body.model, 'translator-1');
    t.match(call.body.messages[0]!.content, /Brazilian Portuguese \(BCP 47: pt-BR\)/);
    t.same(JSON.parse(call.body.messages[1]!.content), {
      subject: 'Hello',
      text: 'Good morning',
      html: '<p>Good <b>morning</b>, {{ not a prop }}</p>',
    });
    const message = await storedMessage(h, res.json().id, ws.workspaceId);
    t.equal(message.subject, '[pt-BR] Hello');
    t.match(message.text, /^\[pt-BR\] Good morning\n\n-- \nJane Doe/);
    t.match(message.html, /<p>\[pt-BR\] Good <b>\[pt-BR\] morning<\/b>\[pt-BR\] , \{\{ not a prop \}\}<\/p>/);
    t.match(message.html, /<div class="signature"><p>Jane Doe<\/p><\/div>/, 'the signature as written');
    const read = await h.request(ws.apiKey, 'GET', `/emails/${res.json().id}`);
    t.equal(read.json().subject, '[pt-BR] Hello');
  });

  t.test("a template's rendering is translated", async (t) => {
    const tpl = await h.request(ws.apiKey, 'POST', '/templates', {
      name: 'Welcome',
      subject: 'Welcome {{name}}',
      document: { body: [{ kind: 'Text', text: 'Hi {{name}}' }] },
      props: [{ name: 'name', type: 'string', default: 'there' }],
      publish: true,
    });
    const res = await send({
      from: 'a@example.com',
      to: 'x@example.org',
      template: { id: tpl.json().id, props: { name: 'Ada' } },
      translate: { to: 'de' },
    });
    t.equal(res.statusCode, 201, res.body);
    const sent = JSON.parse(ai.calls.at(-1)!.body.messages[1]!.content);
    t.equal(sent.subject, 'Welcome Ada', 'the rendered subject goes to the model');
    t.match(sent.html, /Hi Ada/);
    const message = await storedMessage(h, res.json().id, ws.workspaceId);
    t.equal(message.subject, '[de] Welcome Ada');
    t.match(message.html, /\[de\] Hi Ada/);
    t.match(message.text, /\[de\] /);
    const viaTemplate = await h.request(ws.apiKey, 'POST', `/templates/${tpl.json().id}/send`, {
      from: 'a@example.com',
      to: 'x@example.org',
      props: { name: 'Grace' },
      translate: { to: 'nl' },
    });
    t.equal(viaTemplate.statusCode, 201, viaTemplate.body);
    t.equal(viaTemplate.json().subject, '[nl] Welcome Grace', 'POST /templates/{id}/send translates too');
    t.same(
      errorOf(
        await h.request(ws.apiKey, 'POST', `/templates/${tpl.json().id}/send`, {
          from: 'a@example.com',
          to: 'x@example.org',
          translate: { to: 'zz' },
        }),
      ),
      [422, 'unknown_language', 'translate.to'],
    );
  });

  t.test('422 unknown_language, before the model is asked', async (t) => {
    const calls = ai.calls.length;
    for (const to of ['zz', 'klingon', 'en-XX', 'x-private', ''])
      t.same(errorOf(await send({ ...base, translate: { to } })), [422, 'unknown_language', 'translate.to'], to);
    t.same(errorOf(await send({ ...base, translate: { to: 'x'.repeat(36) } })), [
      422,
      'invalid_parameter',
      'translate.to',
    ]);
    t.same(errorOf(await send({ ...base, translate: { to: 'de', from: 'en' } })), [
      422,
      'unknown_parameter',
      'translate.from',
    ]);
    t.equal(ai.calls.length, calls);
  });

  t.test('translation_too_long: at the edge it is translated, one past is 422', async (t) => {
    const edge = { ...base, subject: 'S', text: 'x'.repeat(TRANSLATION_MAX - 1) };
    t.equal((await send({ ...edge, translate: { to: 'fr' } })).statusCode, 201);
    const before = await spent();
    const calls = ai.calls.length;
    t.same(errorOf(await send({ ...edge, text: `${edge.text}x`, translate: { to: 'fr' } })), [
      422,
      'translation_too_long',
      'translate',
    ]);
    t.same(errorOf(await send({ ...edge, text: undefined, html: `${edge.text}xy`, translate: { to: 'fr' } })), [
      422,
      'translation_too_long',
      'translate',
    ]);
    t.equal(ai.calls.length, calls, 'the model was not asked');
    t.equal(await spent(), before);
    t.equal((await send({ ...edge, text: `${edge.text}x` })).statusCode, 201, 'the same message untranslated is fine');
  });

  t.test('503 translation_failed when the model fails: nothing sent, the action given back', async (t) => {
    const cases: [string, (call: ChatCall) => ChatReply][] = [
      ['an HTTP 500', () => ({ status: 500, error: { message: 'overloaded', type: 'server_error' } })],
      ['an HTTP 429 of the provider', () => ({ status: 429, error: { message: 'slow down', type: 'rate_limit' } })],
      ['a wrong key', () => ({ status: 401, error: { message: `bad key ${ai.apiKey}`, type: 'auth' } })],
      ['a slow answer', () => ({ content: '{}', delayMs: 3000 })],
      ['prose instead of JSON', () => ({ content: 'Here is the translation: Hallo' })],
      ['a part missing', () => ({ content: '{"subject":"Hallo"}' })],
      ['a part added', () => ({ content: '{"subject":"Hallo","text":"Morgen","html":"<p>x</p>"}' })],
      ['a part not a string', () => ({ content: '{"subject":"Hallo","text":7}' })],
      ['no message', () => ({ content: null })],
    ];
    const count = await listed();
    const before = await spent();
    for (const [what, reply] of cases) {
      ai.reply = reply;
      const res = await send({ ...base, translate: { to: 'de' } });
      t.same(errorOf(res), [503, 'translation_failed', 'translate'], what);
      noSecret(res);
    }
    t.equal(await listed(), count, 'nothing was stored');
    t.equal(await spent(), before, 'every action was given back');
    ai.reply = translator;
  });

  t.test('without a model: 409 translation_not_configured, checked first', async (t) => {
    const model = h.system.sending.ai.model;
    h.system.sending.ai.model = null;
    try {
      t.same(errorOf(await send({ ...base, translate: { to: 'zz' } })), [
        409,
        'translation_not_configured',
        'translate',
      ]);
      t.equal((await send(base)).statusCode, 201, 'without translate a send needs no model');
    } finally {
      h.system.sending.ai.model = model;
    }
  });

  t.test('batches: at most 10 messages when any translates; each spends its own action', async (t) => {
    const item = { ...base, translate: { to: 'it' } };
    const before = await spent();
    const edge = await h.request(ws.apiKey, 'POST', '/emails/batch', {
      emails: [...Array(TRANSLATED_BATCH_MAX - 1).fill(base), item],
    });
    t.equal(edge.statusCode, 200, edge.body);
    t.equal(edge.json().data.filter((d: { email: unknown }) => d.email).length, TRANSLATED_BATCH_MAX);
    t.equal(edge.json().data.at(-1).email.subject, '[it] Hello');
    t.equal(await spent(), before + 1);
    t.same(
      errorOf(
        await h.request(ws.apiKey, 'POST', '/emails/batch', {
          emails: [...Array(TRANSLATED_BATCH_MAX).fill(base), item],
        }),
      ),
      [422, 'too_many_items', 'emails'],
    );
    const plain = await h.request(ws.apiKey, 'POST', '/emails/batch', {
      emails: Array(TRANSLATED_BATCH_MAX + 1).fill(base),
    });
    t.equal(plain.statusCode, 200, 'without translate the batch limit stays 100');
    ai.reply = (call) =>
      call.body.messages[0]!.content.includes('(BCP 47: es)') ? { content: 'no' } : translator(call);
    const mixed = await h.request(ws.apiKey, 'POST', '/emails/batch', {
      emails: [item, { ...base, translate: { to: 'es' } }, { ...base, translate: { to: 'zz' } }],
    });
    t.match(mixed.json().data, [
      { email: { subject: '[it] Hello' }, error: null },
      { email: null, error: { type: 'api_error', code: 'translation_failed', param: 'translate' } },
      { email: null, error: { type: 'validation_error', code: 'unknown_language', param: 'translate.to' } },
    ]);
    ai.reply = translator;
  });

  t.test('the daily allowance: a test key spends it too; one past is 429 with Retry-After, nothing sent', async (t) => {
    const other = await setUp('example.net');
    const testKey = await keyWith(other.ws, { scopes: ['emails:send'], mode: 'test' });
    const item = { from: 'a@example.net', to: 'x@example.org', subject: 'Hi', text: 'Body', translate: { to: 'ja' } };
    h.system.ai.dailyActions = 3;
    try {
      t.equal((await send(item, testKey)).statusCode, 201);
      for (let i = 0; i < 2; i++) t.equal((await send(item, other.ws.apiKey)).statusCode, 201);
      const count = (await h.request(other.ws.apiKey, 'GET', '/emails?limit=100')).json().data.length;
      const res = await send(item, other.ws.apiKey);
      t.same(errorOf(res), [429, 'ai_quota_exceeded', null]);
      const retryAfter = Number(res.headers['retry-after']);
      t.ok(Math.abs(retryAfter - secondsToNextDay(new Date().toISOString())) <= 5, `Retry-After ${retryAfter}`);
      t.equal((await h.request(other.ws.apiKey, 'GET', '/emails?limit=100')).json().data.length, count, 'nothing sent');
      t.equal(await spent(other.ws.workspaceId), 3);
      const untranslated = { ...item, translate: undefined };
      t.equal((await send(untranslated, other.ws.apiKey)).statusCode, 201, 'mail without translate still goes');
      // Concurrent requests at the edge: exactly the allowance through (the revision read decides).
      h.system.ai.dailyActions = 6;
      const answers = await Promise.all(Array.from({ length: 8 }, () => send(item, other.ws.apiKey)));
      t.same(answers.map((a) => a.statusCode).sort(), [201, 201, 201, 429, 429, 429, 429, 429]);
      t.equal(await spent(other.ws.workspaceId), 6);
      // The first workspace spent more than 3 today, under the allowance it had then: counts are per workspace.
      t.ok((await spent(ws.workspaceId)) > 3);
    } finally {
      h.system.ai.dailyActions = 100;
    }
  });
  t.test('a preview with translate: as a send would read, one action; the same codes', async (t) => {
    const tpl = await broadcastTemplate(h, ws.apiKey, 'Preview translated');
    const preview = (body: object) => h.request(ws.apiKey, 'POST', `/templates/${tpl.id}/preview`, body);
    const before = await spent();
    const res = await preview({ props: { name: 'Ann' }, translate: { to: 'de' } });
    t.equal(res.statusCode, 200, res.body);
    t.equal(res.json().subject, '[de] News for Ann');
    t.match(res.json().text, /^\[de\] Hi Ann/);
    t.match(res.json().html, /\[de\] Hi Ann/);
    t.equal(await spent(), before + 1, 'one AI action, as a send with translate');
    t.equal((await preview({})).json().subject, 'News for there', 'without translate: as written, nothing spent');
    t.equal(await spent(), before + 1);
    t.same(errorOf(await preview({ translate: { to: 'xx-nope-zz' } })), [422, 'unknown_language', 'translate.to']);
    ai.reply = () => ({ status: 500, error: { message: 'overloaded', type: 'server_error' } });
    try {
      t.same(errorOf(await preview({ translate: { to: 'de' } })), [503, 'translation_failed', 'translate']);
    } finally {
      ai.reply = translator;
    }
    t.equal(await spent(), before + 1, 'a failed translation gives its action back');
    h.system.ai.dailyActions = before + 1;
    try {
      const spentOut = await preview({ translate: { to: 'de' } });
      t.same(errorOf(spentOut), [429, 'ai_quota_exceeded', null]);
      t.ok(Number(spentOut.headers['retry-after']) > 0, 'Retry-After to midnight UTC');
    } finally {
      h.system.ai.dailyActions = 100;
    }
    const model = h.system.sending.ai.model;
    h.system.sending.ai.model = null;
    try {
      t.same(errorOf(await preview({ translate: { to: 'de' } })), [409, 'translation_not_configured', 'translate']);
    } finally {
      h.system.sending.ai.model = model;
    }
  });
});
