import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { startTestGateway } from '../helpers/gateway.js';

/**
 * The keys docs/configuration.md says need a restart are exactly those the running gateway's
 * parts derive (ConfigParts.restartKeys), and what `node scripts/reload-keys.mjs` prints: a part
 * made fixed or live, or a key added to or dropped from one, fails here until the doc says so;
 * so does a doc edit that drops or adds a key.
 */
const ROOT = join(import.meta.dirname, '../..');
const DOC = 'docs/configuration.md';
/** Generous: the script starts and stops a gateway, maybe on two busy cores. */
const SCRIPT_MS = 60_000;

/** The backticked keys of a `` `a`, `b` `` list, in order. */
const keysOf = (list: string) => [...list.matchAll(/`([^`]+)`/g)].map((m) => m[1] as string);

/** The `` These need a restart: `a`, `b`. `` list in the doc's "Reloading the config". */
function documented(doc: string): string[] {
  const section = /\n## Reloading the config\n([\s\S]*?)(?:\n## |$)/.exec(doc)?.[1] ?? '';
  const list = /These need a restart: ((?:`[^`]+`(?:, )?)+)\./.exec(section.replace(/\s+/g, ' '));
  if (list === null)
    throw new Error(`${DOC} § Reloading the config has no "These need a restart: \`key\`, …."`);
  return keysOf(list[1] as string);
}

/** How the doc's list differs from the code's, one line per key; empty when they agree. */
function drift(doc: readonly string[], code: readonly string[]): string[] {
  return [
    ...doc.filter((k, i) => doc.indexOf(k) !== i).map((k) => `${k}: listed twice in ${DOC}`),
    ...code.filter((k) => !doc.includes(k)).map((k) => `${k}: needs a restart, not in ${DOC}`),
    ...doc.filter((k) => !code.includes(k)).map((k) => `${k}: in ${DOC}, but a reload applies it`),
  ];
}

const doc = documented(readFileSync(join(ROOT, DOC), 'utf8'));
const t = await startTestGateway();
afterAll(() => t.stop());
const derived = t.gw.parts.restartKeys();

describe('the keys that need a restart', () => {
  it('are read from the doc and compared key by key (the comparison itself)', () => {
    const text =
      '\n## Reloading the config\n\nHeld by parts. These need a restart: `a.b`,\n`c`. Others apply.\n';
    expect(documented(text)).toEqual(['a.b', 'c']);
    expect(() => documented('\n## Reloading the config\n\nNone.\n')).toThrow(DOC);
    expect(drift(['a.b', 'c'], ['c', 'a.b'])).toEqual([]);
    // One key dropped from either side alone, or listed twice, is named.
    const [first, ...rest] = derived;
    expect(drift(derived, rest)).toEqual([`${first}: in ${DOC}, but a reload applies it`]);
    expect(drift(rest, derived)).toEqual([`${first}: needs a restart, not in ${DOC}`]);
    expect(drift([...derived, first as string], derived)).toEqual([
      `${first}: listed twice in ${DOC}`,
    ]);
  });

  it('are in docs/configuration.md as the parts derive them', () => {
    expect(derived.length).toBeGreaterThan(10);
    expect(derived).toEqual(expect.arrayContaining(['state.store', 'listen.proxy']));
    expect(drift(doc, derived)).toEqual([]);
  });

  it(
    'are what scripts/reload-keys.mjs prints, in the form the doc gives them',
    async () => {
      const { stdout } = await promisify(execFile)(
        process.execPath,
        [join(ROOT, 'scripts', 'reload-keys.mjs')],
        { cwd: ROOT, timeout: SCRIPT_MS },
      );
      expect(stdout).toMatch(/^`[^`]+`(, `[^`]+`)*\n$/);
      expect(drift(doc, keysOf(stdout))).toEqual([]);
    },
    SCRIPT_MS,
  );
});
