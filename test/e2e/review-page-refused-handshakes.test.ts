import { describe, expect, it } from 'vitest';
import type { RefusalRecord } from '../../src/journal/records.js';
import { HANDSHAKE_HINT } from '../../src/review/handshakes.js';
import { spawnGateway } from '../helpers/child-gateway.js';
import { runCliAsync } from '../helpers/cli.js';
import { curl } from '../helpers/curl.js';
import { readRecords } from '../helpers/gateway.js';
import { interceptConfig, makeLocalCa, refusals } from '../helpers/tls.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitFor } from '../helpers/wait.js';
import { openBrowser, screenshot, signIn, textOf } from './browser.js';

/**
 * TLS handshakes an agent refuses are shown, not only journaled: real curl without trajgate's
 * CA (no --cacert) through a gateway intercepting a loopback HTTPS upstream, many times; the
 * built CLI's `events` lists each with the hint, the page in Chromium lists them among the
 * session's events, and the gateway's log says it once, then how many more at shutdown.
 */
const up = await startUpstream({ tls: true });
const UP = `127.0.0.1:${up.port}`;
const ADMIN = 'admin-token-for-handshakes-0123456789';
const BURST = 12;
const SESSION = '127.0.0.1';

describe('refused TLS handshakes', () => {
  it('appear in trajgate events, on the review page, and once in the log with a count', async () => {
    const ca = makeLocalCa();
    const g = await spawnGateway({
      ...interceptConfig({ ca, intercept: [UP], allow: [`https://${UP}/`], ports: [up.port] }),
      admin: { token: ADMIN },
    });
    const seen = up.seen.length;
    for (let i = 0; i < BURST; i++) {
      const r = await curl(['-x', `http://127.0.0.1:${g.proxy}`, `https://${UP}/try-${i}`]);
      expect(r.exitCode).toBe(60); // CURLE_PEER_FAILED_VERIFICATION: curl does not trust it
    }
    const refused = () => refusals(readRecords(g.journal)).filter((r) => r.handshake !== undefined);
    await waitFor(() => refused().length === BURST, 10_000, `${BURST} refused handshakes`);
    expect(up.seen.length).toBe(seen);
    expect(refused()[0]).toMatchObject({
      session: SESSION,
      target: UP,
      status: 400,
      handshake: 'unknown_ca',
      reason: expect.stringMatching(/^TLS handshake with the agent failed: .*unknown ca/),
    } satisfies Partial<Record<keyof RefusalRecord, unknown>>);

    // The operator CLI, as an operator runs it.
    const admin = ['--admin', `http://127.0.0.1:${g.admin}`];
    const env = { TRAJGATE_ADMIN_TOKEN: ADMIN };
    const table = await runCliAsync(['events', SESSION, ...admin], { env });
    expect(table.status, table.stderr).toBe(0);
    const rows = table.stdout.split('\n').filter((l) => l.includes('REFUSED (TLS: unknown_ca)'));
    expect(rows).toHaveLength(BURST);
    for (const row of rows) {
      expect(row).toContain(` tls `);
      expect(row).toContain(UP);
      expect(row).toContain(HANDSHAKE_HINT);
    }
    const json = await runCliAsync(['events', SESSION, '--json', ...admin], { env });
    const listed = (JSON.parse(json.stdout) as { events: Record<string, unknown>[] }).events;
    expect(listed).toHaveLength(BURST);
    expect(listed[0]).toMatchObject({
      type: 'refusal',
      handshake: 'unknown_ca',
      target: UP,
      hint: HANDSHAKE_HINT,
    });

    // The review page in Chromium: the session's events list has them, with the hint.
    const { page, errors, offLoopback } = await openBrowser();
    await page.goto(`http://127.0.0.1:${g.admin}/#/session/${SESSION}`);
    await signIn(page, ADMIN);
    const note = page.locator('.handshake-note');
    await textOf(note, new RegExp(`^${BURST} TLS handshakes refused by the agent: `));
    expect(await note.textContent()).toContain(HANDSHAKE_HINT);
    const pageRows = page.locator('table.events tbody tr.is-refused');
    await waitFor(async () => (await pageRows.count()) === BURST, 5_000, 'rows on the page');
    const first = pageRows.first();
    expect(await first.locator('.verdict').textContent()).toBe('REFUSED');
    expect(await first.locator('.col-kind').textContent()).toBe('tls');
    expect(await first.locator('.col-target').textContent()).toBe(UP);
    expect(await first.locator('.col-reason').textContent()).toMatch(/unknown ca.*\(unknown_ca\)$/);
    expect(await first.locator('.col-hint').textContent()).toBe(HANDSHAKE_HINT);
    await screenshot(page, 'review-session-refused-handshakes');
    expect(errors).toEqual([]);
    expect(offLoopback).toEqual([]);

    // The log: one line for the burst, and one with how many more when the gateway stops.
    const logged = (re: RegExp) =>
      g.cli
        .output()
        .stderr.split('\n')
        .filter((l) => re.test(l));
    const once = new RegExp(
      `TLS handshake refused by session ${SESSION} to ${UP} \\(unknown_ca\\): .*unknown ca.*; the client does not trust trajgate's CA`,
    );
    expect(logged(once)).toHaveLength(1);
    g.cli.child.kill('SIGTERM');
    expect(await g.cli.exited).toBe(0);
    const more = logged(/more TLS handshake\(s\) refused/);
    expect(more).toHaveLength(1);
    expect(JSON.parse(more[0] as string)).toMatchObject({
      session: SESSION,
      target: UP,
      handshake: 'unknown_ca',
      suppressed: BURST - 1,
      msg: expect.stringMatching(
        new RegExp(
          `^${BURST - 1} more TLS handshake\\(s\\) refused by session ${SESSION} to ${UP} within 60 s; `,
        ),
      ),
    });
    expect(logged(once)).toHaveLength(1);
  });
});
