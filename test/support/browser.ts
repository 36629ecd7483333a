import { spawnSync } from 'node:child_process';
import { type Browser, chromium } from 'playwright-core';

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
