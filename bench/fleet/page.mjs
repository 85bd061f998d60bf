// The review page open in headless Chromium (playwright-core, Debian's /usr/bin/chromium), signed
// in with the admin token and left to poll, as an operator leaves it open. Counts the page's
// admin API answers so the figure shows the page was live while it was measured.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const CHROMIUM = '/usr/bin/chromium';
// Playwright's own flags already keep Chromium from background traffic (and add --no-sandbox,
// which root needs); these keep it off any proxy and sync service. Only loopback is let through.
const ARGS = ['--disable-gpu', '--no-proxy-server', '--disable-sync'];

/**
 * Opens the page on `adminPort`, signs in and waits for its first sessions answer. Resolves
 * { answers(), close() }: answers() counts the page's `/api/` answers (and the non-200 ones)
 * since it opened.
 */
export async function openPage(adminPort, token) {
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium is not at ${CHROMIUM}`);
  const profile = mkdtempSync(join(tmpdir(), 'trajgate-fleet-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    viewport: { width: 1280, height: 800 },
    timeout: 60_000,
  });
  const close = async () => {
    await context.close().catch(() => undefined);
    rmSync(profile, { recursive: true, force: true });
  };
  try {
    await context.route('**/*', (route) =>
      /^127\./.test(new URL(route.request().url()).hostname) ? route.continue() : route.abort(),
    );
    const page = context.pages()[0] ?? (await context.newPage());
    const counts = { answers: 0, failed: 0, sessionPages: 0 };
    page.on('response', (r) => {
      const path = new URL(r.url()).pathname;
      if (!path.startsWith('/api/')) return;
      counts.answers++;
      if (path === '/api/sessions') counts.sessionPages++;
      if (r.status() !== 200) counts.failed++;
    });
    await page.goto(`http://127.0.0.1:${adminPort}/`);
    const first = page.waitForResponse(
      (r) => new URL(r.url()).pathname === '/api/sessions' && r.status() === 200,
      { timeout: 120_000 },
    );
    await page.getByLabel('Admin token').fill(token);
    await page.getByRole('button', { name: 'Open review' }).click();
    await first;
    return { answers: () => ({ ...counts }), close };
  } catch (err) {
    await close();
    throw err;
  }
}
