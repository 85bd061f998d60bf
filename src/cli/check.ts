import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import { formatHostPort } from '../config/formats.js';
import { defaultConfig, loadConfigFile } from '../config/load.js';
import { TrajgateError } from '../errors.js';
import type { EventInput } from '../event/event.js';

export const CHECK_USAGE =
  'trajgate check (--kind K --target T | --hook claude-code) [--bridge URL] [--config FILE]';

/** What the hook convention reads: 0 lets the action run, 2 blocks it with stderr as the reason. */
const ALLOWED = 0;
const REFUSED = 2;

/**
 * Asks the bridge's ingest route whether an action may happen, for runner hooks. It exits 0
 * for ALLOW and 2 for a refusal with the reason on stderr (Claude Code's PreToolUse
 * convention). An unreachable gateway is a refusal too: a hook that fails open is no guard.
 */
export async function check(
  argv: string[],
  stderr: (line: string) => void,
  stdin: () => string,
): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      kind: { type: 'string' },
      target: { type: 'string' },
      hook: { type: 'string' },
      bridge: { type: 'string' },
      config: { type: 'string' },
    },
  });
  const byFlags = values.kind !== undefined && values.target !== undefined;
  if (
    positionals.length > 0 ||
    byFlags === (values.hook !== undefined) ||
    (values.hook ?? 'claude-code') !== 'claude-code'
  ) {
    throw new TrajgateError('E_USAGE', `usage: ${CHECK_USAGE}`);
  }
  const event: EventInput = byFlags
    ? { kind: values.kind as string, target: values.target as string }
    : claudeCodeEvent(stdin());
  const config = values.config === undefined ? defaultConfig() : loadConfigFile(values.config);
  const base =
    values.bridge ??
    process.env.TRAJGATE_BRIDGE ??
    `http://${formatHostPort(config.listen.bridge)}`;
  const token = process.env.TRAJGATE_AGENT_TOKEN;
  let answer: { verdict?: string; reason?: string; message?: string; error?: { message: string } };
  try {
    const res = await request(new URL('/events', base), {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
      body: JSON.stringify(event),
      headersTimeout: 120_000,
    });
    answer = (await res.body.json()) as typeof answer;
  } catch (err) {
    stderr(
      `trajgate: cannot reach the gateway at ${base} (${(err as Error).message}); refusing ${event.kind} ${event.target}`,
    );
    return REFUSED;
  }
  if (answer.verdict === 'ALLOW') return ALLOWED;
  stderr(
    answer.message?.trim() ||
      `trajgate: ${answer.verdict ?? 'refused'}: ${answer.reason ?? answer.error?.message ?? ''}`,
  );
  return REFUSED;
}

/**
 * Claude Code's PreToolUse input (JSON on stdin: tool_name, tool_input, cwd) as an event:
 * Bash runs a command in cwd, Write/Edit/MultiEdit/NotebookEdit write a file, Read reads one,
 * WebFetch is network access; other tools are `tool` events by name.
 */
export function claudeCodeEvent(text: string): EventInput {
  let input: { tool_name?: unknown; tool_input?: Record<string, unknown>; cwd?: unknown };
  try {
    input = JSON.parse(text) as typeof input;
  } catch {
    throw new TrajgateError('E_EVENT_INVALID', 'hook input on stdin is not JSON');
  }
  const tool = typeof input.tool_name === 'string' ? input.tool_name : '';
  const args = input.tool_input ?? {};
  const str = (v: unknown) => (typeof v === 'string' && v !== '' ? v : null);
  if (tool === '') throw new TrajgateError('E_EVENT_INVALID', 'hook input has no "tool_name"');
  // Without the field its target comes from, a tool is judged by name: never waved through.
  const as = (kind: string, target: string | null): EventInput =>
    target === null ? { kind: 'tool', target: tool } : { kind, target };
  switch (tool) {
    case 'Bash':
      return as('command', str(input.cwd));
    case 'Write':
    case 'Edit':
    case 'MultiEdit':
    case 'NotebookEdit':
      return as('write', str(args.file_path) ?? str(args.notebook_path));
    case 'Read':
      return as('read', str(args.file_path));
    case 'WebFetch':
      return as('network', str(args.url));
    default:
      return { kind: 'tool', target: tool };
  }
}

export const readStdin = (): string => readFileSync(0, 'utf8');
