import t from 'tap';
import { generate } from 'otplib';
import { mailedCode } from '../support/accounts.ts';
import { chromiumPath, NO_CHROMIUM, startPagesApp } from '../support/browser.ts';

const chromium = chromiumPath();

/**
 * Architecture decision 16: the sign-in pages in a real browser. The owner signs in with the
 * code the mail carried, turns two-factor on from the account page, signs out, and signs in again
 * with the authenticator; every field is found by its label, every button by its name.
 */
t.test(
  'sign-in in a real chromium: mailed code, account page, two-factor on, sign-out, sign-in by authenticator',
  { skip: !chromium && NO_CHROMIUM },
  async (t) => {
    const { h, base, smtp, browser, owner } = await startPagesApp(t, chromium as string, 'Acme <Mail>');
    const context = await browser.newContext();
    const problems: string[] = [];
    const page = await context.newPage();
    page.on('pageerror', (e) => problems.push(e.message));
    // The 400 of a wrong code's own document is expected; anything else logged is a problem.
    page.on('console', (m) => {
      if (m.type() === 'error' && !/status of 400/.test(m.text())) problems.push(m.text());
    });
    const heading = () => page.getByRole('heading', { level: 1 }).textContent();
    /** The code of the challenge the page holds, once its mail arrived. */
    const mailed = async () => {
      const challenge = (await page.locator('input[name="challenge"]').getAttribute('value')) as string;
      return mailedCode(smtp.mails, owner, h.system.accounts.ports.codes.signInCode(challenge));
    };
    const press = async (name: string) => {
      await Promise.all([page.waitForNavigation(), page.getByRole('button', { name, exact: true }).click()]);
    };

    const opened = await page.goto(`${base}/account`);
    t.equal(new URL(page.url()).pathname, '/sign-in', 'the account page sends a stranger to sign in');
    t.equal(opened?.status(), 200);
    t.match((await opened?.allHeaders())?.['content-security-policy'], /default-src 'none'/);
    t.equal(await page.title(), 'Sign in');
    t.equal(await page.locator('html').getAttribute('lang'), 'en');
    const email = page.getByLabel('Email address');
    t.equal(await email.getAttribute('type'), 'email');
    t.equal(await email.getAttribute('autocomplete'), 'email');
    await email.fill(owner);
    await press('Email me a code');
    t.equal(await heading(), 'Check your mail');
    t.match(await page.locator('main p').first().innerText(), `If ${owner} has an account with us`);

    const codeField = page.getByLabel('Six-digit code');
    t.equal(await codeField.getAttribute('autocomplete'), 'one-time-code');
    t.equal(await codeField.getAttribute('inputmode'), 'numeric');
    const code = await mailed();
    await codeField.fill(code === '111111' ? '222222' : '111111');
    await press('Sign in');
    t.equal(await heading(), 'Wrong code');
    t.equal(await page.getByRole('alert').innerText(), 'That code is not right. 4 tries left.', 'announced');
    t.equal(await page.getByLabel('Six-digit code').getAttribute('aria-invalid'), 'true');
    await page.getByLabel('Six-digit code').fill(code);
    await press('Sign in');
    t.equal(new URL(page.url()).pathname, '/account');
    t.equal(await heading(), 'Your account');
    t.match(await page.locator('main').innerText(), `Signed in as ${owner}`);
    t.match(await page.getByRole('listitem').first().innerText(), 'Acme <Mail> (owner)', 'the name as text');
    const [cookie] = await context.cookies();
    t.match(cookie, { name: 'wms_session', httpOnly: true, sameSite: 'Lax', secure: false, path: '/' });
    t.equal(await page.evaluate(() => document.cookie), '', 'no script can read the session');

    await press('Turn on two-factor');
    t.equal(await heading(), 'Set up your authenticator');
    const secret = (await page.locator('main code').innerText()).trim();
    t.match(
      await page.getByRole('link', { name: 'Add to an authenticator app' }).getAttribute('href'),
      /^otpauth:\/\/totp\//,
    );
    const now = Math.floor(Date.now() / 1000);
    await page.getByLabel('Code your authenticator shows').fill(await generate({ secret, epoch: now }));
    await press('Turn on two-factor');
    t.equal(await heading(), 'Two-factor sign-in is on');
    t.equal(await page.getByRole('listitem').count(), 10, 'ten backup codes');
    await Promise.all([page.waitForNavigation(), page.getByRole('link', { name: 'Back to your account' }).click()]);
    t.match(await page.locator('main').innerText(), '10 of your backup codes are unused');

    await press('Sign out');
    t.equal(new URL(page.url()).pathname, '/sign-in');
    t.same(await context.cookies(), [], 'the cookie is gone');
    await page.getByLabel('Email address').fill(owner);
    await press('Email me a code');
    await page.getByLabel('Six-digit code').fill(await mailed());
    await press('Sign in');
    t.equal(await heading(), 'Two-factor sign-in');
    await page.getByLabel('Authenticator or backup code').fill(await generate({ secret, epoch: now + 30 }));
    await press('Sign in');
    t.equal(await heading(), 'Your account', 'signed in with the authenticator');
    t.same(problems, [], 'no script errors, nothing blocked by the content security policy');
  },
);
