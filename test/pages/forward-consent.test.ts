import t from 'tap';
import { addForwards } from '../../commands/addresses/handlers.ts';
import { addDomain } from '../../commands/domains/handlers.ts';
import { CONSENT_LINK_TTL_MS } from '../../domain/addresses/decide.ts';
import { startTestApp } from '../support/app.ts';
import { chromiumPath, NO_CHROMIUM, startBrowser } from '../support/browser.ts';
import { freeTcpPort } from '../support/dns-server.ts';
import { eventually } from '../support/receiver.ts';
import { startSmtpServer } from '../support/smtp.ts';

const chromium = chromiumPath();

/**
 * Architecture decision 16: our pages are tested once in a real browser. The service listens on
 * loopback under the public address it mails links for, so the browser opens the very link the
 * destination received, posts the form the page renders, and follows what the server answers.
 */
t.test(
  'forward consent in a real chromium: the mailed link renders, Allow confirms, dead links show the error page',
  { skip: !chromium && NO_CHROMIUM },
  async (t) => {
    const smtp = await startSmtpServer(t);
    const port = await freeTcpPort();
    const base = `http://127.0.0.1:${port}`;
    const h = await startTestApp(t, { smtpUrl: smtp.url, forwardConsent: { pollMs: 20, publicUrl: base } });
    await h.app.listen({ port, host: '127.0.0.1' });
    const ws = await h.workspace();
    const operator = { workspaceId: ws.workspaceId, kind: 'operator' as const, id: null };
    await addDomain(h.system.commands, h.system.domains, operator, { domain: 'example.com' }, new Date().toISOString());
    const jane = (await h.request(ws.apiKey, 'POST', '/addresses', { address: 'jane@example.com' })).json();
    await h.request(ws.apiKey, 'POST', `/addresses/${jane.id}/forwards`, {
      destinations: ['friend@elsewhere.org', 'other@elsewhere.org'],
    });
    const linkTo = (to: string) =>
      eventually(async () =>
        smtp.mails
          .filter((m) => m.to.includes(to))
          .map((m) => /http:\/\/127\.0\.0\.1:\d+\/forward-consent\/\S+/.exec(m.text)?.[0])
          .find((l) => l !== undefined),
      );
    const statusOf = async (destination: string) =>
      (await h.request(ws.apiKey, 'GET', `/addresses/${jane.id}`))
        .json()
        .forwards.find((f: { destination: string }) => f.destination === destination).status;

    const browser = await startBrowser(t, chromium as string);
    const page = await browser.newPage();
    // Script errors and blocked loads; the 404 of a dead link's own document is the one expected.
    const problems: string[] = [];
    const dead = new Set<string>();
    page.on('pageerror', (e) => problems.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error' && !dead.has(m.location().url)) problems.push(`${m.location().url}: ${m.text()}`);
    });

    const link = await linkTo('friend@elsewhere.org');
    t.equal((await page.goto(link))?.status(), 200);
    t.equal(await page.title(), 'Forward mail to you?');
    t.equal(await page.locator('html').getAttribute('lang'), 'en');
    t.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Forward mail to you?');
    t.match(await page.locator('main').innerText(), /jane@example\.com.*friend@elsewhere\.org/s);
    t.ok(await page.getByRole('button', { name: 'Decline' }).isVisible(), 'both answers are buttons by name');
    t.equal(await statusOf('friend@elsewhere.org'), 'pending', 'opening the link changes nothing');

    await page.getByRole('button', { name: 'Allow forwarding' }).click();
    await page.getByRole('heading', { name: 'Forwarding allowed' }).waitFor();
    t.equal(new URL(page.url()).pathname, new URL(link).pathname, 'the form posts back to its own link');
    t.match(await page.locator('main').innerText(), /now forwarded to friend@elsewhere\.org/);
    t.equal(await statusOf('friend@elsewhere.org'), 'confirmed', 'the API shows the forward confirmed');

    const otherLink = await linkTo('other@elsewhere.org');
    await page.goto(otherLink);
    await page.getByRole('button', { name: 'Decline' }).click();
    await page.getByRole('heading', { name: 'Forwarding declined' }).waitFor();
    t.equal(await statusOf('other@elsewhere.org'), 'declined');

    // A link older than its 7 days: one mailed for a forward added (through the command, which
    // takes its time as an input) eight days ago.
    const longAgo = new Date(Date.now() - CONSENT_LINK_TTL_MS - 24 * 3600_000).toISOString();
    await addForwards(
      h.system.commands,
      operator,
      jane.id,
      { destinations: [{ destination: 'late@elsewhere.org', inside: false }], keepCopy: true },
      longAgo,
    );
    const expired = await linkTo('late@elsewhere.org');
    const forged = `${link.slice(0, -4)}AAAA`;
    for (const [what, url] of [
      ['a link answered already', link],
      ['an expired link', expired],
      ['a forged link', forged],
      ['not a link of ours', `${base}/forward-consent/nonsense`],
    ] as const) {
      dead.add(url);
      t.equal((await page.goto(url))?.status(), 404, what);
      t.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'This link no longer works', what);
      t.equal(await page.getByRole('button').count(), 0, `${what}: nothing to answer`);
    }
    t.equal(await statusOf('late@elsewhere.org'), 'pending', 'the expired link answered nothing');
    t.same(problems, [], 'no script errors, nothing blocked by the content security policy');
  },
);
