import crypto from 'node:crypto';
import t from 'tap';
import { mailedCode, postForm } from '../support/accounts.ts';
import { chromiumPath, NO_CHROMIUM, startPagesApp } from '../support/browser.ts';

const chromium = chromiumPath();

/**
 * Architecture decision 16: registering an app, the consent page and the connected-apps page in
 * a real browser. The owner signs in, registers an app, approves it on the consent page (the app's
 * redirect address is on this server, so the browser lands there with the code), and on the
 * connected-apps page allows it changes for 60 minutes, which the app's token then makes.
 */
t.test(
  'connected apps in a real chromium: register, consent, Allow changes for 60 minutes',
  { skip: !chromium && NO_CHROMIUM },
  async (t) => {
    const { h, base, smtp, browser, owner } = await startPagesApp(t, chromium as string, 'Acme');
    const page = await (await browser.newContext()).newPage();
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(e.message));
    const press = async (name: string) => {
      await Promise.all([page.waitForNavigation(), page.getByRole('button', { name, exact: true }).click()]);
    };

    await page.goto(`${base}/sign-in`);
    await page.getByLabel('Email address').fill(owner);
    await press('Email me a code');
    const challenge = (await page.locator('input[name="challenge"]').getAttribute('value')) as string;
    await page
      .getByLabel('Six-digit code')
      .fill(await mailedCode(smtp.mails, owner, h.system.accounts.ports.codes.signInCode(challenge)));
    await press('Sign in');
    t.equal(new URL(page.url()).pathname, '/account');

    await page.goto(`${base}/account/apps`);
    await page.getByLabel('Name people see when they connect it').fill('Browser app');
    await page.getByLabel(/^Redirect addresses/).fill(`${base}/callback`);
    await press('Register');
    const clientId = (await page.locator('#client-id').innerText()).trim();
    t.match(clientId, /^app_/);

    const verifier = crypto.randomBytes(48).toString('base64url');
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: `${base}/callback`,
      scope: 'webhooks:write',
      state: 'b',
      code_challenge: crypto.createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
    });
    await page.goto(`${base}/oauth/authorize?${query}`);
    t.match(await page.locator('main').innerText(), 'Browser app');
    await press('Allow');
    const back = new URL(page.url());
    t.equal(back.pathname, '/callback', 'back at the app');
    const tokens = await postForm(h.app, '/oauth/token', {
      grant_type: 'authorization_code',
      code: back.searchParams.get('code') as string,
      redirect_uri: `${base}/callback`,
      client_id: clientId,
      code_verifier: verifier,
    });
    t.equal(tokens.statusCode, 200);
    const token = tokens.json().access_token as string;
    const createWebhook = () =>
      h.app.inject({
        method: 'POST',
        url: '/webhooks',
        headers: { authorization: `Bearer ${token}` },
        payload: { url: 'https://hooks.example.com/browser' },
      });
    t.equal((await createWebhook()).statusCode, 403, 'not elevated yet');

    await page.goto(`${base}/account/connected-apps`);
    t.match(await page.getByRole('listitem').first().innerText(), 'Browser app');
    await press('Allow changes for 60 minutes: Browser app');
    t.equal(new URL(page.url()).pathname, '/account/connected-apps');
    t.match(await page.getByRole('listitem').first().innerText(), 'Changes allowed until');
    t.equal(await page.getByRole('button', { name: /^Allow changes/ }).count(), 0, 'the offer gone while allowed');
    t.equal((await createWebhook()).statusCode, 201, 'the app makes the change');
    t.same(problems, [], 'no script errors');
  },
);
