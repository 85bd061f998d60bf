import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { afterEach } from 'vitest';

/** Debian's chromium package (`apt-get install -y chromium`; .ci/run installs it). */
export const CHROMIUM = '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
  '--no-proxy-server',
  '--disable-sync',
  '--disable-extensions',
];

const ROOT = join(import.meta.dirname, '../..');
const ARTIFACTS = join(ROOT, 'test/artifacts');

export interface Browsing {
  readonly page: Page;
  readonly context: BrowserContext;
  /** Dialogs the page opened (alert, confirm, prompt): a hostile payload would show here. */
  readonly dialogs: string[];
  /** Uncaught page errors and console errors. */
  readonly errors: string[];
  /** Requests to anything but loopback: blocked, and listed here (must stay empty). */
  readonly offLoopback: string[];
}

/** Open browsers and their profile folders, closed and removed after each test. */
const open = new Map<BrowserContext, string>();
afterEach(async () => {
  const browsers = [...open];
  open.clear();
  await Promise.all(
    browsers.map(async ([context, profile]) => {
      await context.close().catch(() => undefined);
      rmSync(profile, { recursive: true, force: true });
    }),
  );
});

/**
 * Real headless Chromium on a fresh profile, at 1280×800 unless told; closed after each test.
 * Every request is checked: only 127.0.0.0/8 and [::1] may be reached.
 */
export async function openBrowser(viewport = { width: 1280, height: 800 }): Promise<Browsing> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `the browser tests need Debian's chromium at ${CHROMIUM}: apt-get install -y chromium`,
    );
  }
  const profile = mkdtempSync(join(tmpdir(), 'trajgate-chromium-'));
  let context: BrowserContext;
  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ARGS,
      viewport,
      timeout: 30_000,
      timezoneId: 'UTC',
      locale: 'en-GB',
    });
  } catch (err) {
    rmSync(profile, { recursive: true, force: true });
    throw err;
  }
  open.set(context, profile);
  context.setDefaultTimeout(10_000);
  const offLoopback: string[] = [];
  await context.route('**/*', (route) => {
    const url = new URL(route.request().url());
    const loopback = /^127\.\d+\.\d+\.\d+$/.test(url.hostname) || url.hostname === '[::1]';
    if (loopback || url.protocol === 'data:') return route.continue();
    offLoopback.push(url.href);
    return route.abort();
  });
  const page = context.pages()[0] ?? (await context.newPage());
  const dialogs: string[] = [];
  const errors: string[] = [];
  page.on('dialog', (d) => {
    dialogs.push(`${d.type()}: ${d.message()}`);
    void d.dismiss();
  });
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()}`);
  });
  return { page, context, dialogs, errors, offLoopback };
}

/** Pastes the admin token into the page's form. */
export async function signIn(page: Page, token: string): Promise<void> {
  await page.getByLabel('Admin token').fill(token);
  await page.getByRole('button', { name: 'Open review' }).click();
}

/** Waits until `locator`'s text matches; bounded. */
export async function textOf(locator: Locator, pattern: RegExp, ms = 20_000): Promise<string> {
  const until = Date.now() + ms;
  let last = '';
  for (;;) {
    last = (await locator.textContent({ timeout: ms }).catch(() => null)) ?? '';
    if (pattern.test(last)) return last;
    if (Date.now() > until)
      throw new Error(`text ${JSON.stringify(last)} never matched ${pattern}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Saves a screenshot under test/artifacts/ (git-ignored). With TRAJGATE_DOCS_SCREENSHOTS=1,
 * also refreshes docs/`docs` (docs/review.md's pictures, committed).
 */
export async function screenshot(page: Page, name: string, docs?: string): Promise<string> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const file = join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  if (docs && process.env.TRAJGATE_DOCS_SCREENSHOTS === '1')
    copyFileSync(file, join(ROOT, 'docs', docs));
  return file;
}

/** The page's horizontal overflow in CSS pixels (0: nothing sticks out at this width). */
export function overflowX(page: Page): Promise<number> {
  return page.evaluate(
    'document.documentElement.scrollWidth - document.documentElement.clientWidth',
  ) as Promise<number>;
}
