import t from 'tap';
import type { Response } from 'playwright-core';
import { addDomain } from '../../commands/domains/handlers.ts';
import { startTestApp } from '../support/app.ts';
import { chromiumPath, NO_CHROMIUM, startBrowser } from '../support/browser.ts';
import { freeTcpPort } from '../support/dns-server.ts';
import { eventually } from '../support/receiver.ts';
import { startSmtpServer } from '../support/smtp.ts';

const chromium = chromiumPath();

/** What every page of ours sends to keep it out of frames, caches and other origins' logs. */
const SECURITY_HEADERS = [
  'content-security-policy',
  'x-frame-options',
  'x-content-type-options',
  'referrer-policy',
  'cache-control',
];
const securityHeaders = async (response: Response | null) => {
  const all = (await response?.allHeaders()) ?? {};
  return Object.fromEntries(SECURITY_HEADERS.map((name) => [name, all[name]]));
};

/**
 * Architecture decision 16: our pages are tested once in a real browser. The invitee opens the
 * very link the mail carried, presses the button the page renders, and the API then shows them
 * as a member with what the invitation gave. A workspace name that is markup checks the page
 * prints it as text.
 */
t.test(
  'invitation acceptance in a real chromium: the mailed link renders, Accept makes a member, dead links show nothing',
  { skip: !chromium && NO_CHROMIUM },
  async (t) => {
    const smtp = await startSmtpServer(t);
    const port = await freeTcpPort();
    const base = `http://127.0.0.1:${port}`;
    const h = await startTestApp(t, {
      smtpUrl: smtp.url,
      forwardConsent: { pollMs: 20, publicUrl: base },
      invitationMails: { pollMs: 20 },
    });
    await h.app.listen({ port, host: '127.0.0.1' });
    const workspaceName = 'Acme & <Sons>';
    const ws = await h.workspace(workspaceName);
    await addDomain(
      h.system.commands,
      h.system.domains,
      { workspaceId: ws.workspaceId, kind: 'operator', id: null },
      { domain: 'example.com' },
      new Date().toISOString(),
    );
    const sales = (await h.request(ws.apiKey, 'POST', '/addresses', { address: 'sales@example.com' })).json();
    const domainId = (await h.request(ws.apiKey, 'GET', '/domains')).json().data[0].id as string;
    const member = (await h.request(ws.apiKey, 'GET', '/roles?limit=100'))
      .json()
      .data.find((r: { builtin: string | null }) => r.builtin === 'member');
    const members = async () => (await h.request(ws.apiKey, 'GET', '/members?limit=100')).json().data;

    const invite = async (body: Record<string, unknown>) => {
      const invited = await h.request(ws.apiKey, 'POST', '/members', body);
      t.equal(invited.statusCode, 201, `invited ${body.email}`);
      return invited.json().id as string;
    };
    const linkTo = (to: string) =>
      eventually(async () =>
        smtp.mails
          .filter((m) => m.to.includes(to))
          .map((m) => /http:\/\/127\.0\.0\.1:\d+\/invitations\/\S+/.exec(m.text)?.[0])
          .find((l) => l !== undefined),
      );

    const invitationId = await invite({
      email: 'Ann@Example.org',
      roleId: member.id,
      addressIds: [sales.id],
      domainIds: [domainId],
      access: 'viewer',
    });
    const link = await linkTo('ann@example.org');
    t.match(link, `${base}/invitations/${invitationId}.`, 'the mail links to this service, naming the invitation');

    const browser = await startBrowser(t, chromium as string);
    const context = await browser.newContext();
    // Script errors and blocked loads; the 404 of a dead link's own document is the one expected.
    const problems: string[] = [];
    const dead = new Set<string>();
    context.on('page', (p) => {
      p.on('pageerror', (e) => problems.push(e.message));
      p.on('console', (m) => {
        if (m.type() === 'error' && !dead.has(m.location().url)) problems.push(`${m.location().url}: ${m.text()}`);
      });
    });
    const tab = () => context.newPage();

    // The security headers every page sends, taken from the unsubscribe page.
    const unsubscribeToken = await h.system.sending.unsubscribeLinks.token({
      partition: ws.workspaceId,
      email: 'reader@example.org',
      audienceId: null,
    });
    const reference = await securityHeaders(await (await tab()).goto(`${base}/unsubscribe/${unsubscribeToken}`));
    t.match(reference['content-security-policy'], /default-src 'none'/, 'the pages have a content security policy');
    t.equal(reference['x-frame-options'], 'DENY');
    t.equal(reference['x-content-type-options'], 'nosniff');

    const invitee = await tab();
    // A second tab holds the same page open, to press Accept once the first one has.
    const late = await tab();
    for (const p of [invitee, late]) {
      const opened = await p.goto(link);
      t.equal(opened?.status(), 200);
      t.same(await securityHeaders(opened), reference, 'the invitation page sends the same security headers');
    }
    t.equal(await invitee.title(), `Join ${workspaceName}?`);
    t.equal(await invitee.locator('html').getAttribute('lang'), 'en');
    t.equal(await invitee.getByRole('heading', { level: 1 }).textContent(), `Join ${workspaceName}?`);
    t.equal(
      await invitee.locator('main p').innerText(),
      `You, ann@example.org, are invited to the workspace ${workspaceName}.`,
      'the invitee and the workspace, printed as text',
    );
    const accept = invitee.getByRole('button', { name: 'Accept the invitation' });
    t.equal(await accept.count(), 1, 'one button, by its accessible name');
    t.equal(
      await accept.evaluate((b) => [b.tagName, (b as HTMLButtonElement).form?.method]).then(String),
      'BUTTON,post',
      'a real button, submitting a form that posts',
    );
    t.same(
      (await members()).map((m: { email: string }) => m.email),
      ['owner0@example.com'],
      'opening the link changes nothing',
    );

    const [accepted] = await Promise.all([
      invitee.waitForResponse((r) => r.request().method() === 'POST'),
      accept.click(),
    ]);
    t.equal(accepted.status(), 200);
    t.same(await securityHeaders(accepted), reference, 'the result page sends them too');
    await invitee.getByRole('heading', { name: `Welcome to ${workspaceName}` }).waitFor();
    t.equal(new URL(invitee.url()).pathname, new URL(link).pathname, 'the form posts back to its own link');
    t.equal(await invitee.locator('main p').innerText(), `ann@example.org is now a member of ${workspaceName}.`);
    t.equal(await invitee.getByRole('button').count(), 0, 'nothing more to press');
    const ann = (await members()).find((m: { email: string }) => m.email === 'ann@example.org');
    t.match(ann, {
      object: 'member',
      isOwner: false,
      role: { id: member.id, builtin: 'member' },
      addresses: [{ addressId: sales.id, address: 'sales@example.com', access: 'viewer' }],
      domains: [{ domainId, domain: 'example.com', access: 'viewer' }],
    });
    t.same(ann.permissions, member.permissions, 'with the invited role, its permissions');

    // The link once used: opened again, and the form of the tab opened before pressed.
    dead.add(link);
    const again = await invitee.goto(link);
    t.equal(again?.status(), 404, 'a used link');
    t.same(await securityHeaders(again), reference, 'the error page sends them too');
    t.equal(await invitee.getByRole('heading', { level: 1 }).textContent(), 'This invitation no longer works');
    t.equal(await invitee.getByRole('button').count(), 0, 'a used link: nothing to accept');
    const [second] = await Promise.all([
      late.waitForResponse((r) => r.request().method() === 'POST'),
      late.getByRole('button', { name: 'Accept the invitation' }).click(),
    ]);
    t.equal(second.status(), 404, 'a second acceptance');
    t.same(await securityHeaders(second), reference);
    await late.getByRole('heading', { name: 'This invitation no longer works' }).waitFor();
    t.equal(
      (await members()).filter((m: { email: string }) => m.email === 'ann@example.org').length,
      1,
      'one membership',
    );

    // Forgeries of a link that still works, so only the forging can be what closes them.
    await invite({ email: 'bo@example.org', roleId: member.id });
    const live = await linkTo('bo@example.org');
    const [id, nonce, mac] = new URL(live).pathname.split('/').at(-1)!.split('.') as [string, string, string];
    for (const [what, token] of [
      ['a forged MAC', `${id}.${nonce}.${mac.slice(0, -4)}AAAA`],
      ['a truncated MAC', `${id}.${nonce}.${mac.slice(0, -1)}`],
      ['no MAC', `${id}.${nonce}`],
      ['the id alone', id],
      ['a link of another kind', unsubscribeToken],
      ['not a link of ours', 'nonsense'],
    ] as const) {
      const url = `${base}/invitations/${token}`;
      dead.add(url);
      const answer = await invitee.goto(url);
      t.equal(answer?.status(), 404, what);
      t.same(await securityHeaders(answer), reference, `${what}: the security headers`);
      t.equal(await invitee.getByRole('heading', { level: 1 }).textContent(), 'This invitation no longer works', what);
      t.equal(await invitee.getByRole('button').count(), 0, `${what}: nothing to accept`);
      const text = await invitee.content();
      t.notOk(/Acme|@example/.test(text), `${what}: no workspace or invitee named`);
    }
    t.equal((await invitee.goto(live))?.status(), 200, 'the link forged from still works');
    t.match(await invitee.locator('main').innerText(), /bo@example\.org/);
    t.same(problems, [], 'no script errors, nothing blocked by the content security policy');
  },
);
