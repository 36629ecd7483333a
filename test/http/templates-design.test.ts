import t from 'tap';
import { secondsToNextDay } from '../../domain/ai-actions/decide.ts';
import { startAiServer, type ChatCall } from '../support/ai-server.ts';
import { startTestApp } from '../support/app.ts';
import { errorOf } from '../support/domains.ts';

const nameProp = { name: 'name', type: 'string', default: 'there' };
const linkProp = { name: 'cta', type: 'url', default: 'https://example.com/go' };
const designed = {
  body: [
    {
      kind: 'Section',
      style: { backgroundColor: '#f4f4f4', padding: '24px' },
      children: [
        { kind: 'Heading', text: 'Welcome, {{name}}', level: 1 },
        { kind: 'Button', text: 'Get started', href: '{{cta}}', style: { backgroundColor: '#0a7' } },
      ],
    },
  ],
  preview: 'Hello {{name}}',
};
const answer = (document: unknown) => () => ({ content: JSON.stringify({ document }) });

t.test('design and redesign through the AI port', async (t) => {
  const ai = await startAiServer(t);
  const h = await startTestApp(t, {
    ai: {
      endpoint: { baseUrl: ai.baseUrl, apiKey: ai.apiKey, model: 'designer-1', timeoutMs: 1000 },
      dailyActions: 50,
    },
  });
  const ws = await h.workspace();
  const create = async (body: object) => {
    const res = await h.request(ws.apiKey, 'POST', '/templates', body);
    if (res.statusCode !== 201) throw new Error(res.body);
    return res.json();
  };
  const spent = async (workspaceId = ws.workspaceId) => {
    const events = await h.system.store.readStream(
      `ws-${workspaceId}.ai-actions-${new Date().toISOString().slice(0, 10)}`,
    );
    return (events.at(-1)?.data as { used?: number } | undefined)?.used ?? 0;
  };
  const noSecret = (res: { body: string }) => t.notMatch(res.body, ai.apiKey, 'the API key is never in an answer');

  t.test('design: a published html template gets blocks as a new draft version; sends keep version 1', async (t) => {
    const tpl = await create({
      name: 'Designed',
      subject: 'Hi {{name}}',
      html: '<p>Hi {{name}}</p>',
      props: [nameProp, linkProp],
      publish: true,
    });
    ai.reply = answer(designed);
    const before = await spent();
    const res = await h.request(ws.apiKey, 'POST', `/templates/${tpl.id}/design`, {
      brief: 'A friendly welcome with a big green button',
    });
    t.equal(res.statusCode, 200, res.body);
    noSecret(res);
    t.match(res.json(), {
      status: 'active',
      publishedVersion: 1,
      latestVersion: 2,
      latest: { version: 2, state: 'draft', engine: 'blocks', html: null, subject: 'Hi {{name}}', document: designed },
    });
    t.ok(res.headers.etag, 'answers with the ETag like every template write');
    t.equal(await spent(), before + 1, 'one AI action spent');
    const call = ai.calls.at(-1)!;
    t.equal(call.body.model, 'designer-1');
    t.same(call.body.response_format, { type: 'json_object' });
    t.match(call.body.messages[0]!.content, /name \(string\), cta \(url\)/, 'the model is told the props');
    t.same(JSON.parse(call.body.messages[1]!.content), {
      brief: 'A friendly welcome with a big green button',
      subject: 'Hi {{name}}',
    });
    const rendered = await h.request(ws.apiKey, 'POST', `/templates/${tpl.id}/render`, {});
    t.equal(rendered.json().version, 1, 'a send still renders the published version');
    const draft = await h.request(ws.apiKey, 'POST', `/templates/${tpl.id}/render`, {
      version: 2,
      props: { name: 'Ada' },
    });
    t.equal(draft.statusCode, 200, draft.body);
    t.match(draft.json().html, /Welcome, Ada/);
  });

  t.test('redesign: the head blocks go to the model; an html head is 422 before any action', async (t) => {
    const html = await create({ name: 'Html only', subject: 'S', html: '<p>x</p>' });
    const calls = ai.calls.length;
    const before = await spent();
    t.same(errorOf(await h.request(ws.apiKey, 'POST', `/templates/${html.id}/redesign`, { brief: 'darker' })), [
      422,
      'invalid_template',
      'engine',
    ]);
    t.equal(ai.calls.length, calls, 'the model was not asked');
    t.equal(await spent(), before, 'no action spent');

    const blocks = await create({
      name: 'Blocks',
      subject: 'S',
      document: { body: [{ kind: 'Text', text: 'Hi {{name}}' }] },
      props: [nameProp],
    });
    const restyled = {
      body: [{ kind: 'Text', text: 'Hi {{name}}', style: { color: '#fff', backgroundColor: '#111' } }],
    };
    ai.reply = answer(restyled);
    const res = await h.request(ws.apiKey, 'POST', `/templates/${blocks.id}/redesign`, { brief: 'dark mode' });
    t.equal(res.statusCode, 200, res.body);
    t.match(res.json(), { status: 'draft', latestVersion: 2, latest: { version: 2, document: restyled } });
    const sent = JSON.parse(ai.calls.at(-1)!.body.messages[1]!.content);
    t.same(sent.document, { body: [{ kind: 'Text', text: 'Hi {{name}}' }], tailwind: false });
    t.match(ai.calls.at(-1)!.body.messages[0]!.content, /restyle/);
  });

  t.test('a model answer that is not a valid block document: 503 design_failed, nothing stored or spent', async (t) => {
    const tpl = await create({ name: 'Bad answers', subject: 'S', props: [nameProp] });
    const cases: [string, (call: ChatCall) => unknown, RegExp][] = [
      ['not JSON', () => ({ content: 'Sure! Here is your email.' }), /other than JSON/],
      ['no document', () => ({ content: '{"blocks":[]}' }), /without a `document`/],
      ['an unknown block', answer({ body: [{ kind: 'Marquee', text: 'x' }] }), /document\.body\.0/],
      ['a refused style', answer({ body: [{ kind: 'Text', text: 'x', style: { position: 'fixed' } }] }), /style/],
      ['a javascript link', answer({ body: [{ kind: 'Button', text: 'x', href: 'javascript:alert(1)' }] }), /href/],
      ['an undeclared placeholder', answer({ body: [{ kind: 'Text', text: '{{secret}}' }] }), /secret/],
      ['a url placeholder of a string prop', answer({ body: [{ kind: 'Img', src: '{{name}}' }] }), /url/],
      [
        'blocks nested past 8 levels',
        answer({
          body: [
            Array.from({ length: 8 }).reduce<object>((inner) => ({ kind: 'Section', children: [inner] }), {
              kind: 'Text',
              text: 'deep',
            }),
          ],
        }),
        /8 levels/,
      ],
      ['an HTTP 500', () => ({ status: 500, error: { message: 'boom', type: 'server_error' } }), /HTTP 500/],
      ['a wrong key (401)', () => ({ status: 401, error: { message: 'bad key', type: 'auth' } }), /HTTP 401/],
      ['a slow answer', () => ({ content: '{}', delayMs: 3000 }), /in time/],
    ];
    for (const [what, reply, message] of cases) {
      ai.reply = reply as (call: ChatCall) => never;
      const before = await spent();
      const res = await h.request(ws.apiKey, 'POST', `/templates/${tpl.id}/design`, { brief: 'anything' });
      t.same(errorOf(res), [503, 'design_failed', null], what);
      t.match(res.json().error.message, message, what);
      noSecret(res);
      t.equal(await spent(), before, `${what}: the action was given back`);
    }
    const after = await h.request(ws.apiKey, 'GET', `/templates/${tpl.id}`);
    t.equal(after.json().latestVersion, 1, 'nothing was stored');
  });

  t.test('the daily allowance: one past is 429 ai_quota_exceeded with Retry-After to midnight UTC', async (t) => {
    const other = await h.workspace();
    const tpl = (await h.request(other.apiKey, 'POST', '/templates', { name: 'Quota', subject: 'S' })).json();
    ai.reply = answer({ body: [{ kind: 'Text', text: 'ok' }] });
    h.system.ai.dailyActions = 2;
    try {
      for (let i = 0; i < 2; i++)
        t.equal(
          (await h.request(other.apiKey, 'POST', `/templates/${tpl.id}/design`, { brief: `b${i}` })).statusCode,
          200,
        );
      const res = await h.request(other.apiKey, 'POST', `/templates/${tpl.id}/redesign`, { brief: 'more' });
      t.same(errorOf(res), [429, 'ai_quota_exceeded', null]);
      const retryAfter = Number(res.headers['retry-after']);
      t.ok(Math.abs(retryAfter - secondsToNextDay(new Date().toISOString())) <= 5, `Retry-After ${retryAfter}`);
      t.equal((await h.request(other.apiKey, 'GET', `/templates/${tpl.id}`)).json().latestVersion, 3);
      t.equal(await spent(other.workspaceId), 2);
    } finally {
      h.system.ai.dailyActions = 50;
    }
  });

  t.test('without a model: 409 ai_not_configured; a foreign id is 404; the brief is 1 to 2000', async (t) => {
    const tpl = await create({ name: 'Unconfigured', subject: 'S' });
    const model = h.system.ai.model;
    h.system.ai.model = null;
    try {
      for (const action of ['design', 'redesign'])
        t.same(errorOf(await h.request(ws.apiKey, 'POST', `/templates/${tpl.id}/${action}`, { brief: 'x' })), [
          409,
          'ai_not_configured',
          null,
        ]);
    } finally {
      h.system.ai.model = model;
    }
    const foreign = await h.workspace();
    t.same(errorOf(await h.request(foreign.apiKey, 'POST', `/templates/${tpl.id}/design`, { brief: 'x' })), [
      404,
      'resource_not_found',
      'id',
    ]);
    t.same(
      errorOf(await h.request(ws.apiKey, 'POST', '/templates/tpl_000000000000000000000000/design', { brief: 'x' })),
      [404, 'resource_not_found', 'id'],
    );
    for (const brief of ['', '   ', 'x'.repeat(2001)])
      t.same(errorOf(await h.request(ws.apiKey, 'POST', `/templates/${tpl.id}/design`, { brief })), [
        422,
        'invalid_parameter',
        'brief',
      ]);
    t.same(errorOf(await h.request(ws.apiKey, 'POST', `/templates/${tpl.id}/design`, { brief: 'x', publish: true })), [
      422,
      'unknown_parameter',
      'publish',
    ]);
    ai.reply = answer({ body: [{ kind: 'Text', text: 'edge' }] });
    t.equal(
      (await h.request(ws.apiKey, 'POST', `/templates/${tpl.id}/design`, { brief: 'x'.repeat(2000) })).statusCode,
      200,
    );
    const readOnly = (
      await h.request(ws.apiKey, 'POST', '/keys', { name: 'reader', scopes: ['templates:read'] })
    ).json().token;
    const testKey = (
      await h.request(ws.apiKey, 'POST', '/keys', { name: 'tester', scopes: ['templates:write'], mode: 'test' })
    ).json().token;
    const calls = ai.calls.length;
    t.same(
      errorOf(await h.request(testKey, 'POST', `/templates/${tpl.id}/design`, { brief: 'x' })),
      [403, 'beyond_caller_authority', null],
      'a test key changes no live configuration, so it spends nothing',
    );
    t.equal(ai.calls.length, calls);
    t.same(errorOf(await h.request(readOnly, 'POST', `/templates/${tpl.id}/design`, { brief: 'x' })), [
      403,
      'insufficient_scope',
      null,
    ]);
  });
});
