import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';

/** `trajgate --version`, `trajgate help [COMMAND]` and `trajgate COMMAND --help` for every command. */
const COMMANDS = [
  'start',
  'replay',
  'check-config',
  'check',
  'ca',
  'export',
  'verify',
  'env',
  'sessions',
  'events',
  'approve',
  'revoke',
  'deny-pattern',
  'resume',
  'deny',
  'credentials',
  'tools',
  'reload',
];

const version = (
  JSON.parse(readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8')) as {
    version: string;
  }
).version;

describe('trajgate --version and help', () => {
  it('--version prints the package version', () => {
    for (const flag of ['--version', '-v']) {
      const r = runCli([flag]);
      expect(r.status).toBe(0);
      expect(r.stdout).toBe(`${version}\n`);
    }
  });

  it('help lists every command and says how to get more', () => {
    const r = runCli(['help']);
    expect(r.status).toBe(0);
    for (const c of COMMANDS) expect(r.stdout).toContain(`\n  trajgate ${c}`);
    expect(r.stdout).toContain('trajgate COMMAND --help');
    expect(runCli(['--help']).stdout).toBe(r.stdout);
  });

  it('no command, an unknown one, or help for an unknown one → the list on stderr, exit 2', () => {
    for (const args of [[], ['bogus'], ['help', 'bogus']]) {
      const r = runCli(args);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain('  trajgate start [--config FILE]');
    }
  });
});

describe.each(COMMANDS)('trajgate %s --help', (command) => {
  it('exits 0 with its usage, options and one example; -h and help COMMAND say the same', () => {
    const r = runCli([command, '--help']);
    expect(r.status).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(new RegExp(`^usage: trajgate ${command}[ \\n]`));
    if (command !== 'check-config') expect(r.stdout).toContain('\noptions:\n  ');
    expect(r.stdout).toMatch(new RegExp(`\\nexample:\\n  trajgate ${command}( .*)?\\n$`));
    expect(runCli([command, '-h']).stdout).toBe(r.stdout);
    expect(runCli(['help', command]).stdout).toBe(r.stdout);
  });
});

describe('--help wins over everything else on the line', () => {
  it('approve --help without its arguments is help, not a usage error', () => {
    const r = runCli(['approve', '--help']);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('trajgate approve --from SEQ');
  });

  it('start --help does not start; ca init --help creates nothing; a bad option is ignored', () => {
    const dir = join(tempDir(), 'certs');
    for (const args of [
      ['start', '--config', '/nonexistent.yaml', '--help'],
      ['ca', 'init', '--dir', dir, '-h'],
      ['events', '--bogus', '--help'],
    ]) {
      const r = runCli(args);
      expect(r.status, args.join(' ')).toBe(0);
      expect(r.stdout).toMatch(/^usage: trajgate /);
    }
    expect(existsSync(dir)).toBe(false);
  });

  it('after --, --help is an argument like any other', () => {
    const r = runCli(['replay', '--', '--help']);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('ENOENT: cannot read --help: no such file or folder');
  });

  it("usage errors quote the command's usage and point at --help", () => {
    const r = runCli(['replay']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('usage: trajgate replay FILE.jsonl|-');
    expect(r.stderr).toContain('trajgate replay --help');
  });
});
