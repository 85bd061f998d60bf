import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { runCli, SEED_EXAMPLE } from '../helpers/cli.js';
import { DRIFT_AFTER_FAILURE } from '../helpers/rules.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * The recorded trajectories of test/fixtures/trajectories (see its README), replayed through
 * the built CLI with the example config's boundaries, allowlist and three rules: each event
 * line gets the verdict its `.expected` file names, and the benign ones never pause.
 */
const ROOT = join(import.meta.dirname, '../..');
const DIR = join(ROOT, 'test/fixtures/trajectories');
const EXAMPLE = join(ROOT, 'config/trajgate.example.yaml');
const WORKSPACE = '/home/dev/project';
const RULES = ['secret-then-egress', 'drift-after-failure', 'egress-volume'];

interface Replayed {
  line: number;
  session: string;
  verdict: string;
  boundary: string | null;
  rule?: { name: string; after?: number };
}

const names = readdirSync(DIR)
  .filter((f) => f.endsWith('.jsonl'))
  .map((f) => f.slice(0, -'.jsonl'.length))
  .sort();
const benign = names.filter((n) => n.startsWith('benign-'));
const drifting = names.filter((n) => n.startsWith('drift-'));

/** The verdict lines of NAME.expected: `#` lines and blank lines are notes. */
function expectedOf(name: string): string[] {
  return readFileSync(join(DIR, `${name}.expected`), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.startsWith('#'));
}

/** Each non-blank line of the trajectory with its 1-based line number. */
function linesOf(name: string): { line: number; value: Record<string, unknown> }[] {
  return readFileSync(join(DIR, `${name}.jsonl`), 'utf8')
    .split('\n')
    .map((text, i) => ({ line: i + 1, text }))
    .filter(({ text }) => text.trim() !== '')
    .map(({ line, text }) => ({ line, value: JSON.parse(text) as Record<string, unknown> }));
}

const isEvent = (value: Record<string, unknown>) =>
  value.type === undefined || value.type === 'event';

const verdictOf = (d: Replayed) =>
  d.verdict === 'ALLOW' ? 'ALLOW' : `${d.verdict}: ${d.boundary}`;

function replay(file: string, args: string[]): Replayed[] {
  const r = runCli(['replay', file, '--json', ...args]);
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  return r.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Replayed);
}

describe('recorded trajectories', () => {
  it('holds at least 20 benign and 10 drifting ones, each with its expected verdicts', () => {
    expect(benign.length).toBeGreaterThanOrEqual(20);
    expect(drifting.length).toBeGreaterThanOrEqual(10);
    expect(benign.length + drifting.length).toBe(names.length);
    const expectations = readdirSync(DIR).filter((f) => f.endsWith('.expected'));
    expect(expectations.sort()).toEqual(names.map((n) => `${n}.expected`));
  });

  it('the drifting ones fire every rule of the example; the benign ones expect no PAUSE and no rule', () => {
    const fired = new Set(drifting.flatMap(expectedOf).map((v) => v.replace(/^\w+: /, '')));
    for (const rule of RULES) expect(fired, rule).toContain(rule);
    for (const name of benign) {
      for (const v of expectedOf(name)) {
        expect(v, name).not.toMatch(/^PAUSE/);
        expect(RULES, name).not.toContain(v.replace(/^\w+: /, ''));
      }
    }
  });

  describe.each(names)('%s', (name) => {
    it('replays to the expected verdict on each event line', () => {
      const lines = linesOf(name);
      const events = lines.filter((l) => isEvent(l.value));
      const want = expectedOf(name);
      expect(want, `${name}.expected has one verdict per event line`).toHaveLength(events.length);
      const got = replay(join(DIR, `${name}.jsonl`), [
        '--config',
        EXAMPLE,
        '--workspace',
        WORKSPACE,
      ]);
      expect(got.map((d) => `line ${d.line}: ${verdictOf(d)}`)).toEqual(
        events.map((e, i) => `line ${e.line}: ${want[i]}`),
      );
      for (const d of got) {
        if (name.startsWith('benign-')) expect(d.rule, `line ${d.line}`).toBeUndefined();
        if (d.boundary === null || !RULES.includes(d.boundary)) continue;
        // A rule names the decision and, unless it counts volume, the event it followed.
        expect(d.rule?.name, `line ${d.line}`).toBe(d.boundary);
        if (d.boundary === 'egress-volume') continue;
        const earlier = lines.filter(
          (l) => l.line < d.line && isEvent(l.value) && l.value.session === d.session,
        );
        // Lines with a seq are referred to by it (as a journal's are), others by line number.
        const ids = earlier.map((l) => (typeof l.value.seq === 'number' ? l.value.seq : l.line));
        expect(ids, `line ${d.line}: rule.after ${d.rule?.after}`).toContain(d.rule?.after);
      }
    });
  });
});

describe("the seed article's example", () => {
  const SEED = SEED_EXAMPLE;
  const tmp = tempDir();
  const seed = join(tmp, 'seed.jsonl');
  writeFileSync(seed, SEED + '\n');
  const example = parse(readFileSync(EXAMPLE, 'utf8')) as {
    policy: { sequences: { name: string }[] };
  };
  // The example's rules alone: no extra boundaries, no allowlist.
  const rulesOnly = join(tmp, 'rules-only.yaml');
  writeFileSync(
    rulesOnly,
    stringify({ version: 1, workspace: tmp, policy: { sequences: example.policy.sequences } }),
  );

  it('the example config carries the three rules, drift-after-failure as the tests use it', () => {
    expect(example.policy.sequences.map((s) => s.name)).toEqual(RULES);
    expect(example.policy.sequences[1]).toEqual(DRIFT_AFTER_FAILURE);
  });

  it.each([
    ['no config (no rules)', []],
    ['the example config', ['--config', EXAMPLE]],
    ["only the example's rules", ['--config', rulesOnly]],
  ])('is unchanged with %s', (_, args) => {
    const r = runCli(['replay', seed, '--workspace', '/tmp/agent-demo', ...args]);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('ALLOW\nALLOW\nREVIEW: network\nPAUSE: network\n');
    expect(r.status).toBe(0);
  });
});
