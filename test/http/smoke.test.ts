import t from 'tap';
import { startTestApp } from '../support/app.ts';

t.test('an owner key answers /ping and /keys/self', async (t) => {
  const h = await startTestApp(t);
  const ws = await h.workspace();
  const ping = await h.request(ws.apiKey, 'GET', '/ping');
  t.equal(ping.statusCode, 200);
  t.match(ping.json(), { ok: true, kind: 'apiKey', workspaceId: ws.workspaceId, roleId: null, mode: 'live' });
  t.match(ping.headers['request-id'], /^req_[0-9a-f]{24}$/);
  const self = await h.request(ws.apiKey, 'GET', '/keys/self');
  t.equal(self.json().object, 'api_key');
  t.same(
    Object.keys(ping.json()).sort(),
    ['grantedScopes', 'keyId', 'kind', 'mode', 'ok', 'roleId', 'scopes', 'workspaceId'],
    'no object field, no allowlists',
  );
  t.equal(ping.json().keyId, self.json().id);
  t.notOk(self.json().scopes.includes('workspace:manage'));
});
