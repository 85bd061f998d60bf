import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, SEED_EXAMPLE } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';

const tmp = tempDir();
const SEED = SEED_EXAMPLE;

function file(name: string, text: string): string {
  const path = join(tmp, name);
  writeFileSync(path, text);
  return path;
}

describe('trajgate replay', () => {
  it('reproduces the seed article exactly from a file', () => {
    const r = runCli(['replay', file('seed.jsonl', SEED + '\n'), '--workspace', '/tmp/agent-demo']);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('ALLOW\nALLOW\nREVIEW: network\nPAUSE: network\n');
    expect(r.status).toBe(0);
  });

  it('reads standard input with "-", last line without a newline', () => {
    const r = runCli(['replay', '-', '--workspace', '/tmp/agent-demo'], { input: SEED });
    expect(r.stdout).toBe('ALLOW\nALLOW\nREVIEW: network\nPAUSE: network\n');
    expect(r.status).toBe(0);
  });

  it('prints one decision object per line with --json', () => {
    const r = runCli(['replay', '-', '--workspace', '/tmp/agent-demo', '--json'], { input: SEED });
    const decisions = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(decisions.map((d) => d.verdict)).toEqual(['ALLOW', 'ALLOW', 'REVIEW', 'PAUSE']);
    expect(decisions[3]).toMatchObject({
      line: 4,
      session: 'replay',
      boundary: 'network',
      count: 2,
      approved: false,
    });
    expect(decisions[3].reason).toContain('example.test:443');
  });

  it('honours --config: allowlist, thresholds and extra kinds', () => {
    const config = file(
      'policy.yaml',
      'version: 1\nworkspace: /tmp/agent-demo\nnetwork: { allow: [example.test] }\n' +
        'policy: { boundaries: { deploy: { kinds: [deploy], targets: [production], pauseAt: 1 } } }\n',
    );
    const input = `${SEED}\n{"kind":"deploy","target":"staging"}\n{"kind":"deploy","target":"production"}\n`;
    const r = runCli(['replay', '-', '--config', config], { input });
    expect(r.stdout).toBe('ALLOW\nALLOW\nALLOW\nALLOW\nALLOW\nPAUSE: deploy\n');
  });

  it('replays a journal: events are judged again, approvals and resumes applied', () => {
    const journal = [
      '{"seq":1,"ts":"2026-01-01T00:00:00.000Z","type":"event","session":"a","source":"proxy","kind":"network","target":"https://x.test/","approved":false,"verdict":"REVIEW","boundary":"network","count":1,"reason":"r"}',
      '{"seq":2,"ts":"2026-01-01T00:00:01.000Z","type":"approve","session":"a","pattern":"x.test","kind":"network","expiresAt":null,"by":"op"}',
      '{"seq":3,"ts":"2026-01-01T00:00:02.000Z","type":"event","session":"a","source":"proxy","kind":"network","target":"https://x.test/","approved":false,"verdict":"ALLOW","boundary":null,"count":0,"reason":"r"}',
      '{"seq":4,"ts":"2026-01-01T00:00:02.500Z","type":"outcome","ref":3,"status":200}',
      '{"seq":5,"ts":"2026-01-01T00:00:03.000Z","type":"event","session":"a","source":"proxy","kind":"network","target":"https://y.test/","approved":false,"verdict":"PAUSE","boundary":"network","count":2,"reason":"r"}',
    ].join('\n');
    const r = runCli(['replay', file('journal.jsonl', journal + '\n')]);
    expect(r.stdout).toBe('REVIEW: network\nALLOW\nPAUSE: network\n');
  });

  const bad: [string, string, RegExp, string][] = [
    [
      'malformed line',
      `${SEED.split('\n').slice(0, 2).join('\n')}\n{"kind":"network",\n`,
      /bad\.jsonl:3: not valid JSON/,
      'ALLOW\nALLOW\n',
    ],
    [
      'unknown kind',
      '{"kind":"teleport","target":"x"}\n',
      /bad\.jsonl:1: unknown kind "teleport" \(known: read, write, command, network, internal, tool\)/,
      '',
    ],
    [
      'non-string target',
      '{"kind":"write","target":42}\n',
      /bad\.jsonl:1: "target" must be a string, got number 42/,
      '',
    ],
    [
      'missing target',
      '{"kind":"write"}\n',
      /bad\.jsonl:1: "target" must be a string, got nothing/,
      '',
    ],
    ['array line', '[1]\n', /bad\.jsonl:1: expected a JSON object/, ''],
    [
      'bad approved',
      '{"kind":"write","target":"/x","approved":"yes"}\n',
      /"approved" must be true or false/,
      '',
    ],
    [
      'bad network target',
      '{"kind":"network","target":"example.test"}\n',
      /bad\.jsonl:1: network target "example.test" is neither an absolute URL nor host:port/,
      '',
    ],
    ['empty file', '', /bad\.jsonl: no events to replay \(the input is empty\)/, ''],
    ['blank lines only', '\n\n  \n', /no events to replay/, ''],
  ];
  it.each(bad)(
    '%s: one clear line with the place, non-zero exit, earlier verdicts kept',
    (_, text, message, stdout) => {
      const r = runCli(['replay', file('bad.jsonl', text), '--workspace', '/tmp/agent-demo']);
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(message);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stdout).toBe(stdout);
    },
  );

  it('a missing file, a folder and a non-YAML config are each named', () => {
    const missing = runCli(['replay', join(tmp, 'nope.jsonl')]);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toBe(
      `trajgate: ENOENT: cannot read ${join(tmp, 'nope.jsonl')}: no such file or folder; check the path\n`,
    );
    const folder = runCli(['replay', tmp]);
    expect(folder.status).toBe(1);
    expect(folder.stderr).toBe(
      `trajgate: ${tmp}:1: EISDIR: cannot read ${tmp}: it is a folder; name a file\n`,
    );
    const notYaml = runCli(['replay', '-', '--config', file('c.yaml', 'policy: [\n')], {
      input: SEED,
    });
    expect(notYaml.status).toBe(1);
    expect(notYaml.stderr).toContain('c.yaml: not valid YAML');
    expect(notYaml.stdout).toBe('');
  });

  it('usage errors exit 2', () => {
    expect(runCli(['replay']).status).toBe(2);
    expect(runCli(['replay', 'a', 'b']).stderr).toContain('usage: trajgate replay');
    expect(runCli(['frobnicate']).status).toBe(2);
    expect(runCli(['replay', '--bogus', 'x']).status).not.toBe(0);
  });
});

describe('trajgate check-config', () => {
  it('prints ok for the example config', () => {
    const r = runCli(
      ['check-config', join(import.meta.dirname, '../../config/trajgate.example.yaml')],
      {
        env: { AGENT_1_TOKEN: 'a'.repeat(20), TRAJGATE_ADMIN_TOKEN: 'b'.repeat(20) },
      },
    );
    expect(r.stdout.split('\n')[0]).toBe('ok');
    expect(r.status).toBe(0);
  });

  it('lists every error with its key path and exits 1', () => {
    const r = runCli([
      'check-config',
      file('broken.yaml', 'version: 1\npolicy: { countBy: x, holdTimeout: soon }\nbogus: true\n'),
    ]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(
      'broken.yaml:2:11: policy.countBy: expected boundary | target, got "x"',
    );
    expect(r.stderr).toContain('policy.holdTimeout: expected a duration');
    expect(r.stderr).toContain('broken.yaml:3:1: bogus: unknown key');
  });
});

describe('trajgate start', () => {
  it('refuses a bad config before touching the journal', () => {
    const journal = join(tmp, 'never', 'journal.jsonl');
    const config = file(
      'start-bad.yaml',
      `version: 1\njournal: ${journal}\npolicy: { pause: maybe }\n`,
    );
    const r = runCli(['start', '--config', config]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('policy.pause: expected hold | block');
    expect(existsSync(join(tmp, 'never'))).toBe(false);
  });
});
