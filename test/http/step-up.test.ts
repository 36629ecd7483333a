import t from 'tap';
import { stepUpRefusal, type Credential } from '../../api/credential.ts';
import { startTestApp } from '../support/app.ts';

const NOW = Date.parse('2026-01-01T12:00:00.000Z');
const credential = (kind: Credential['kind'], elevatedUntil?: string | null): Credential => ({
  kind,
  id: null,
  workspaceId: 'ws_1',
  mode: 'live',
  grantedScopes: [],
  scopes: [],
  roleId: null,
  addressAllowlist: null,
  domainAllowlist: null,
  elevatedUntil,
});

t.test('step-up: an OAuth token must be elevated for sensitive changes; API keys are never asked', async (t) => {
  t.equal(stepUpRefusal(credential('apiKey'), NOW), null);
  t.type(stepUpRefusal(credential('oauth'), NOW), 'string', 'never elevated');
  t.type(stepUpRefusal(credential('oauth', '2026-01-01T11:59:59.999Z'), NOW), 'string', 'elevation ran out');
  t.equal(stepUpRefusal(credential('oauth', '2026-01-01T12:30:00.000Z'), NOW), null, 'elevated');
});

t.test('the sensitive operations say so in the OpenAPI document, and keys pass them', async (t) => {
  const h = await startTestApp(t);
  const ws = await h.workspace();
  const doc = (await h.request(null, 'GET', '/openapi.json')).json();
  for (const [path, method] of [
    ['/webhooks', 'post'],
    ['/webhooks/{id}', 'patch'],
    ['/roles/{id}', 'patch'],
    ['/roles/{id}', 'delete'],
  ] as const) {
    t.match(doc.paths[path][method].description, /step_up_required/, `${method} ${path}`);
  }
  t.notMatch(
    doc.paths['/webhooks/{id}'].delete.description,
    /step_up_required/,
    'delete of an endpoint is not on the list',
  );
  t.equal(
    (await h.request(ws.apiKey, 'POST', '/webhooks', { url: 'https://hooks.example.com/x' })).statusCode,
    201,
    'a key is never asked',
  );
});
