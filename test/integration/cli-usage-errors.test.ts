import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { CLI, runCli } from '../helpers/cli.js';

/**
 * Mistyped flags get one line of trajgate's own (exit 2), not parseArgs's advice about `--`;
 * output into a pipe its reader closed early ends quietly, not with an EPIPE stack.
 */
describe('flags trajgate does not know', () => {
  it.each([
    [['events', 'agent-1', '--frobnicate'], "trajgate events: unknown option '--frobnicate'"],
    [['sessions', '--admin'], "trajgate sessions: option '--admin <value>' argument missing"],
    [['replay', '--nope', 'x.jsonl'], "trajgate replay: unknown option '--nope'"],
    [['verify', '-z'], "trajgate verify: unknown option '-z'"],
  ])('%j → one line, exit 2', (args, line) => {
    const r = runCli(args);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`${line} (trajgate ${args[0]} --help for usage)\n`);
  });
});

/** Runs the CLI with stdout into a pipe whose reader is gone before it writes (`| true`). */
function readerGone(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stdout.destroy();
    child.stderr.on('data', (c: Buffer) => (stderr += c));
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

describe('a reader that stops early', () => {
  it.each([[['help']], [['help', 'events']], [['export', '--help']]])(
    '%j | true exits quietly (0, nothing on stderr)',
    async (args) => {
      expect(await readerGone(args)).toEqual({ code: 0, stderr: '' });
    },
  );
});
