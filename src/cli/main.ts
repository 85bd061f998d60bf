// The CLI's commands (bin/trajgate.cjs imports this file; a hook's `check` runs from
// dist/hook/ instead, see src/cli/hook-main.ts).
import { readFileSync } from 'node:fs';
import { errnoCode, exitCode, isTrajgateError } from '../errors.js';
import { formatHostPort } from '../config/formats.js';
import { argsError } from './args-error.js';
import { terminalLines } from './table.js';

/** The package's version, read when asked (not on a hook's every call). */
const version = (): string =>
  (
    JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    }
  ).version;

/** Commands' help, loaded when asked for: a hook's check runs on every tool call. */
const help = () => import('./help.js');

/** Old names of commands, each working as its new one until the next minor version. */
const OLD_NAMES: Readonly<Record<string, string>> = { block: 'deny-pattern' };

/** `--help` or `-h` anywhere before a `--`: help wins over every other argument. */
function asksHelp(args: readonly string[]): boolean {
  const end = args.indexOf('--');
  return (end === -1 ? args : args.slice(0, end)).some((a) => a === '--help' || a === '-h');
}

// A reader that stops early (`trajgate events | head -1`) closes the pipe: that is not a
// failure of ours, so exit quietly instead of an unhandled EPIPE and its stack.
process.stdout.on('error', (err) => {
  if (errnoCode(err) === 'EPIPE') process.exit(0);
  process.stderr.write(`trajgate: cannot write the output: ${err.message}\n`);
  process.exit(1);
});

async function main(argv: string[]): Promise<number> {
  // Errors and check's refusals quote agents' targets: made safe for a terminal.
  const log = (line: string) => process.stderr.write(terminalLines(line) + '\n');
  /** A command's name now; an old one says so on stderr (docs/glossary.md). */
  const current = (name: string | undefined): string | undefined => {
    const now = name !== undefined && Object.hasOwn(OLD_NAMES, name) ? OLD_NAMES[name] : name;
    if (now !== name)
      log(`trajgate: "${name}" is now "${now}"; the old name goes in the next minor version`);
    return now;
  };
  const [named, ...rest] = argv;
  const command = current(named);
  const print = (line: string) => process.stdout.write(line + '\n');
  if (command === '--version' || command === '-v' || command === 'version') {
    print(version());
    return 0;
  }
  if (command === 'help' || command === '--help' || command === '-h') {
    const { helpText, overview } = await help();
    const [asked, extra] = rest;
    const topic = current(asked);
    const text = topic === undefined ? overview() : helpText(topic);
    if (text === undefined || extra !== undefined) {
      log(`trajgate help: unknown command "${rest.join(' ')}"\n${overview()}`);
      return 2;
    }
    print(text);
    return 0;
  }
  const text =
    command !== undefined && asksHelp(rest) ? (await help()).helpText(command) : undefined;
  if (text !== undefined) {
    print(text);
    return 0;
  }
  // Each command loads its own modules only: a running gateway does not carry the operator
  // client, replay or state rebuild (nor the parts of undici only they use).
  try {
    switch (command) {
      case 'start':
        return await (await import('./start.js')).start(rest, log);
      case 'replay':
        return await (await import('./replay.js')).replay(rest);
      case 'ca':
        return await (await import('./ca.js')).ca(rest, print);
      case 'export':
        return (await import('./export.js')).exportCommand(rest, print, version());
      case 'check': {
        const { check, readStdin } = await import('./check.js');
        return await check(rest, {
          out: print,
          err: log,
          stdin: readStdin,
          usage: async () => (await help()).usageLine('check'),
          bridgeOf: async (file) =>
            formatHostPort(
              (await import('../config/operator-config.js')).loadOperatorConfig(file).listen.bridge,
            ),
        });
      }
      case 'check-config':
        return (await import('./check-config.js')).checkConfig(rest, print);
      case 'verify':
        return (await import('./verify.js')).verify(rest, print, log);
      case 'state':
        return await (await import('./state.js')).state(rest, print, log);
      case 'learn':
        return (await import('./learn.js')).learn(rest, print, log);
      case 'env':
        return await (await import('./env.js')).env(rest, print, log);
      case 'doctor':
        return await (await import('./doctor.js')).doctor(rest, print);
      case 'sessions':
      case 'events':
      case 'approve':
      case 'resume':
      case 'deny':
      case 'topup':
      case 'revoke':
      case 'deny-pattern':
      case 'reload':
      case 'credentials':
      case 'tools':
        return await (await import('./operator.js')).operator(command, rest, print);
      default: {
        const { overview } = await help();
        log(
          command === undefined
            ? overview()
            : `trajgate: unknown command "${command}"\n${overview()}`,
        );
        return 2;
      }
    }
  } catch (err) {
    const wrong = argsError(err);
    if (wrong !== null) {
      log(`trajgate ${command}: ${wrong} (trajgate ${command} --help for usage)`);
      return 2;
    }
    if (!isTrajgateError(err)) {
      // An OS error no command foresaw still says where and what to do, not a stack.
      const said = (await import('../os-error.js')).systemMessage(err);
      if (errnoCode(err) === undefined || said === (err as Error).message) throw err;
      log(`trajgate: ${said}`);
      return 1;
    }
    log(`trajgate: ${err.message}`);
    for (const detail of err.details) log(`  ${detail}`);
    return exitCode(err.code);
  }
}

process.exitCode = await main(process.argv.slice(2));
