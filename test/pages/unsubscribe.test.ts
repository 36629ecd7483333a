import t from 'tap';
import { startTestApp } from '../support/app.ts';
import { chromiumPath, NO_CHROMIUM, startBrowser } from '../support/browser.ts';
import { freeTcpPort } from '../support/dns-server.ts';

const chromium = chromiumPath();

/** The preferences page in a real browser: buttons found by their accessible names, forms posted back to the link. */
t.test(
  'the unsubscribe preferences page in a real chromium: leave and rejoin a list, leave everything',
  { skip: !chromium && NO_CHROMIUM },
  async (t) => {
    const port = await freeTcpPort();
    const base = `http://127.0.0.1:${port}`;
    const h = await startTestApp(t);
    await h.app.listen({ port, host: '127.0.0.1' });
    const ws = await h.workspace();
    const weekly = (
      await h.request(ws.apiKey, 'POST', '/audiences', { name: 'Weekly news', showOnPreferences: true })
    ).json();
    await h.request(ws.apiKey, 'POST', '/audiences', { name: 'Staff only' });
    const token = await h.system.sending.unsubscribeLinks.token({
      partition: ws.workspaceId,
      email: 'reader@example.org',
      audienceId: null,
    });
    const scopes = async () =>
      (await h.request(ws.apiKey, 'GET', '/suppressions/unsubscribes'))
        .json()
        .data.map((u: any) => u.audienceId ?? 'all');

    const browser = await startBrowser(t, chromium as string);
    const page = await browser.newPage();
    const problems: string[] = [];
    const dead = new Set<string>();
    page.on('pageerror', (e) => problems.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error' && !dead.has(m.location().url)) problems.push(`${m.location().url}: ${m.text()}`);
    });

    const link = `${base}/unsubscribe/${token}`;
    t.equal((await page.goto(link))?.status(), 200);
    t.equal(await page.title(), 'Email preferences');
    t.equal(await page.locator('html').getAttribute('lang'), 'en');
    t.match(await page.locator('main').innerText(), /reader@example\.org/);
    t.equal(await page.getByRole('button', { name: 'Leave Staff only' }).count(), 0, 'a list not shown on preferences');
    t.same(await scopes(), [], 'opening the link changes nothing');

    await page.getByRole('button', { name: 'Leave Weekly news' }).click();
    await page.getByRole('button', { name: 'Rejoin Weekly news' }).waitFor();
    t.equal(new URL(page.url()).pathname, new URL(link).pathname, 'the form posts back to its own link');
    t.equal(await page.getByRole('status').textContent(), 'You are unsubscribed.');
    t.same(await scopes(), [weekly.id]);

    await page.getByRole('button', { name: 'Rejoin Weekly news' }).click();
    await page.getByRole('button', { name: 'Leave Weekly news' }).waitFor();
    t.same(await scopes(), []);

    await page.getByRole('button', { name: 'Unsubscribe from everything' }).click();
    await page.getByRole('button', { name: 'Subscribe again' }).waitFor();
    t.same(await scopes(), ['all']);

    const forged = `${link.slice(0, -4)}AAAA`;
    dead.add(forged);
    t.equal((await page.goto(forged))?.status(), 404);
    t.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'This link does not work');
    t.equal(await page.getByRole('button').count(), 0);
    t.same(problems, [], 'no script errors, nothing blocked by the content security policy');
  },
);
