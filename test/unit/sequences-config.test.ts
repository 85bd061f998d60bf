import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parseConfig } from '../../src/config/load.js';
import { TrajgateError } from '../../src/errors.js';
import { compilePolicy } from '../../src/guard/compile.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * Bad input: `policy.sequences` rules that cannot mean what they say are config
 * errors naming the rule (its index and name) and the key, as `check-config` prints them.
 */
const dir = tempDir();
const GOOD = { name: 'ok', after: { kind: 'read' }, then: { kind: 'network' }, verdict: 'PAUSE' };

function errorsOf(rules: unknown[], extra: Record<string, unknown> = {}): string[] {
  const text = stringify({ version: 1, workspace: dir, ...extra, policy: { sequences: rules } });
  try {
    parseConfig(text, 'test.yaml', dir);
  } catch (err) {
    if (!(err instanceof TrajgateError)) throw err;
    expect(err.code).toBe('E_CONFIG_INVALID');
    // `test.yaml:LINE:COL: ` leads each line.
    return err.details.map((d) => d.replace(/^test\.yaml:\d+:\d+: /, ''));
  }
  throw new Error('the config loaded without error');
}

const CASES: [string, unknown[], string][] = [
  [
    'an unknown matcher',
    [GOOD, { ...GOOD, name: 'typo', after: { kind: 'read', falied: true } }],
    'policy.sequences[1] (typo).after.falied: unknown matcher (known: kind, target, failed, refused, crossing, approved)',
  ],
  [
    'a path glob that never matches an absolute path',
    [{ ...GOOD, after: { kind: 'read', target: ['~/.ssh/**'] } }],
    'policy.sequences[0] (ok).after.target[0]: a path glob must start with / or *',
  ],
  [
    'a network pattern that does not parse',
    [{ ...GOOD, then: { kind: 'network', target: ['*bad*.example'] } }],
    'policy.sequences[0] (ok).then.target[0]: pattern "*bad*.example":',
  ],
  [
    'a boundary crossing that does not exist',
    [{ ...GOOD, name: 'drift', after: { failed: true }, then: { crossing: 'netwrk' } }],
    'policy.sequences[0] (drift).then.crossing: no boundary "netwrk" (boundaries: workspace, network, tool)',
  ],
  [
    'a within that is neither a duration nor N events',
    [GOOD, { ...GOOD, name: 'drift-after-failure', within: '5 evnts' }],
    'policy.sequences[1] (drift-after-failure).within: expected a duration like 1h or "N events", got "5 evnts"',
  ],
  [
    'a within of zero events',
    [{ ...GOOD, within: '0 events' }],
    'policy.sequences[0] (ok).within: expected a duration like 1h or "N events", got "0 events"',
  ],
  [
    'a within as a bare number',
    [{ ...GOOD, within: 5 }],
    'policy.sequences[0] (ok).within: expected a duration like 1h or "N events", got number 5',
  ],
  [
    'a volume in an unknown unit',
    [{ name: 'vol', volume: { up: '10 megs', within: '10m' }, verdict: 'REVIEW' }],
    'policy.sequences[0] (vol).volume.up: expected bytes like 10MB, 512KiB or 1GB',
  ],
  [
    'a volume window that is not a duration',
    [{ name: 'vol', volume: { up: '10MB', within: '10 events' }, verdict: 'REVIEW' }],
    'policy.sequences[0] (vol).volume.within: expected a duration like 30s, 10m or 1h, got "10 events"',
  ],
  [
    'a volume rule with after',
    [{ name: 'vol', volume: { up: '1MB', within: '1m' }, after: {}, verdict: 'REVIEW' }],
    'policy.sequences[0] (vol).after: a volume rule takes no "after"',
  ],
  [
    'a sequence rule without then',
    [{ name: 'half', after: { kind: 'read' }, verdict: 'PAUSE' }],
    'policy.sequences[0] (half).then: is required',
  ],
  [
    'a verdict that does not act',
    [{ ...GOOD, verdict: 'ALLOW' }],
    'policy.sequences[0] (ok).verdict: expected REVIEW | PAUSE, got "ALLOW"',
  ],
  [
    'an unknown key on the rule',
    [{ ...GOOD, whithin: '1h' }],
    'policy.sequences[0] (ok).whithin: unknown key',
  ],
  [
    'two rules with one name',
    [GOOD, { ...GOOD, after: { kind: 'write' } }],
    'policy.sequences[1] (ok).name: duplicates policy.sequences[0] (ok)',
  ],
  [
    'a name with a space',
    [{ ...GOOD, name: 'two words' }],
    'policy.sequences[0] (two words).name: a rule name uses only letters, digits, ., _ and -',
  ],
];

describe('bad trajectory rules name the rule and the key', () => {
  it.each(CASES)('%s', (_, rules, expected) => {
    const errors = errorsOf(rules);
    expect(
      errors.some((e) => e.startsWith(expected)),
      errors.join('\n'),
    ).toBe(true);
  });

  it('reports every problem of a rule at once, with the duplicate among them', () => {
    const errors = errorsOf([
      GOOD,
      { ...GOOD, after: { kind: 'read', nope: 1 }, within: '1 hour', extra: true },
    ]);
    expect(errors).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^policy\.sequences\[1\] \(ok\)\.after\.nope: unknown matcher/),
        expect.stringMatching(/^policy\.sequences\[1\] \(ok\)\.within: expected a duration/),
        'policy.sequences[1] (ok).extra: unknown key',
        'policy.sequences[1] (ok).name: duplicates policy.sequences[0] (ok)',
      ]),
    );
  });

  it('crossing the tool boundary is an error only when bridge.unmapped is allow', () => {
    const rule = { ...GOOD, then: { crossing: 'tool' } };
    expect(errorsOf([rule], { bridge: { unmapped: 'allow' } })).toEqual([
      'policy.sequences[0] (ok).then.crossing: no boundary "tool" (boundaries: workspace, network)',
    ]);
    const text = stringify({ version: 1, workspace: dir, policy: { sequences: [rule] } });
    expect(() => parseConfig(text, 'test.yaml', dir)).not.toThrow();
  });
});

describe('good trajectory rules compile', () => {
  it('the three documented rules, with every form of within and volume', () => {
    const text = stringify({
      version: 1,
      workspace: dir,
      policy: {
        sequences: [
          {
            name: 'secret-then-egress',
            after: { kind: 'read', target: ['**/.ssh/**', '**/.env'] },
            then: { kind: 'network' },
            within: '1h',
            verdict: 'PAUSE',
          },
          {
            name: 'drift-after-failure',
            after: { failed: true },
            then: { crossing: 'network' },
            within: '5 events',
            verdict: 'PAUSE',
          },
          { name: 'one', after: { refused: true }, then: {}, within: '1 event', verdict: 'REVIEW' },
          { name: 'egress-volume', volume: { up: '10MB', within: '10m' }, verdict: 'REVIEW' },
          { name: 'kib', volume: { up: '1.5KiB', within: '1s' }, then: {}, verdict: 'PAUSE' },
          { name: 'bytes', volume: { up: 2048, within: '1d' }, verdict: 'PAUSE' },
        ],
      },
    });
    const rules = compilePolicy(parseConfig(text, 'test.yaml', dir)).sequences;
    expect(rules.map((r) => [r.name, r.type, r.verdict])).toEqual([
      ['secret-then-egress', 'sequence', 'PAUSE'],
      ['drift-after-failure', 'sequence', 'PAUSE'],
      ['one', 'sequence', 'REVIEW'],
      ['egress-volume', 'volume', 'REVIEW'],
      ['kib', 'volume', 'PAUSE'],
      ['bytes', 'volume', 'PAUSE'],
    ]);
    const [secret, drift, one, volume, kib, bytes] = rules;
    expect(secret).toMatchObject({ within: { ms: 3_600_000, text: '1h' }, onFailure: false });
    expect(drift).toMatchObject({ within: { events: 5, text: '5 events' }, onFailure: true });
    expect(one).toMatchObject({ within: { events: 1 } });
    expect(volume).toMatchObject({ up: 10_000_000, windowMs: 600_000 });
    // Without `then`, a volume rule judges network events (further egress) only.
    expect(volume?.type === 'volume' && volume.then.kinds).toEqual(new Set(['network']));
    expect(kib).toMatchObject({ up: 1536, windowMs: 1000 });
    expect(bytes).toMatchObject({ up: 2048, upText: '2048B', windowMs: 86_400_000 });
  });

  it('no rules by default', () => {
    const config = parseConfig(stringify({ version: 1, workspace: dir }), 'test.yaml', dir);
    expect(config.policy.sequences).toEqual([]);
    expect(compilePolicy(config).sequences).toEqual([]);
  });
});
