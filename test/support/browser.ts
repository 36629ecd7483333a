import { spawnSync } from 'node:child_process';
import { type Browser, chromium } from 'playwright-core';
import { startTestApp, type TestApp } from './app.ts';
import { freeTcpPort } from './dns-server.ts';
import { startSmtpServer } from './smtp.ts';

/**
 * Debian's chromium (`apt-get install chromium`), or the one `CHROMIUM_PATH` names; null when
 * there is none, and tests that need it skip, saying so. playwright-core downloads no browser of
 * its own: it drives this one.
 */
export function chromiumPath(): string | null {
  const candidate = process.env.CHROMIUM_PATH ?? spawnSync('which', ['chromium'], { encoding: 'utf8' }).stdout.trim();
  return candidate !== '' ? candidate : null;
}

export const NO_CHROMIUM = 'chromium is not installed (apt-get install chromium, or set CHROMIUM_PATH)';

/** A headless chromium closed at the test's end; no sandbox, since CI runs as root. */
export async function startBrowser(
  t: { teardown(fn: () => Promise<void> | void): void },
  executablePath: string,
): Promise<Browser> {
  const browser = await chromium.launch({ executablePath, headless: true, args: ['--no-sandbox'] });
  t.teardown(() => browser.close());
  return browser;
}

/**
 * The service listening on a loopback port (pages need a real socket), its mail going to a loopback
 * SMTP server, one workspace made (owner `owner0@example.com`), and a headless chromium.
 */
export async function startPagesApp(
  t: { teardown(fn: () => Promise<void> | void): void },
  executablePath: string,
  workspaceName: string,
): Promise<{
  h: TestApp;
  base: string;
  smtp: Awaited<ReturnType<typeof startSmtpServer>>;
  browser: Browser;
  owner: string;
}> {
  const smtp = await startSmtpServer(t);
  const port = await freeTcpPort();
  const base = `http://127.0.0.1:${port}`;
  const h = await startTestApp(t, {
    smtpUrl: smtp.url,
    forwardConsent: { publicUrl: base },
    signInMails: { pollMs: 20 },
  });
  await h.app.listen({ port, host: '127.0.0.1' });
  await h.workspace(workspaceName);
  return { h, base, smtp, browser: await startBrowser(t, executablePath), owner: 'owner0@example.com' };
}
