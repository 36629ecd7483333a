import t from 'tap';
import { WorkspaceTokens } from '../../commands/signed-tokens.ts';
import { UnsubscribeLinks } from '../../commands/unsubscribes/links.ts';
import { startTestApp } from '../support/app.ts';

t.test('workspace tokens: signed per workspace and purpose, refused when altered', async (t) => {
  const h = await startTestApp(t);
  const [a, b] = [await h.workspace(), await h.workspace()];
  const secrets = h.system.domains.secrets;
  const tokens = new WorkspaceTokens(secrets, 'unsubscribe', 1200);
  const own = (fields: string[]) => fields[0] ?? null;

  const token = (await tokens.signer(a.workspaceId))([a.workspaceId, 'x@example.org']);
  t.same(await tokens.read(token, own), [a.workspaceId, 'x@example.org']);
  const [payload, mac] = token.split('.') as [string, string];
  const claimsB = Buffer.from(`${b.workspaceId}\nx@example.org`).toString('base64url');
  t.equal(await tokens.read(`${claimsB}.${mac}`, own), null, "another workspace's fields under a's MAC");
  t.equal(await tokens.read(`${payload}.${mac.slice(1)}x`, own), null, 'an altered MAC');
  t.equal(await tokens.read(`${payload}.${mac}.more`, own), null, 'a third part');
  t.equal(await new WorkspaceTokens(secrets, 'tracking', 1200).read(token, own), null, 'another purpose');

  // A link mailed before links named their message (three fields) still reads, naming none.
  const links = new UnsubscribeLinks(secrets, 'https://mail.example.com');
  const old = (await tokens.signer(a.workspaceId))([a.workspaceId, 'y@example.org', '']);
  t.same(await links.read(old), { partition: a.workspaceId, email: 'y@example.org', audienceId: null, emailId: null });
});
