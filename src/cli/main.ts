#!/usr/bin/env -S node --max-semi-space-size=8 --single-threaded-gc
// A proxy's garbage dies young. V8 grows each semi-space to 16 MB by default; 8 MB keeps the
// young generation's share of peak RSS down at no cost in throughput. GC work stays on the main
// thread: a gateway usually gets one or two CPUs, and background GC threads competing with the
// event loop for them set its tail latency (bench/proxy: p99 0.83–1.07 × the forwarder's with
// this flag, up to 1.76 × without). The flags are also in `npm start` and the Dockerfile, and
// the benches read them from this line.
import { readFileSync } from 'node:fs';
import { errnoCode, isTrajgateError } from '../errors.js';
import { ca, CA_USAGE } from './ca.js';
import { EXPORT_USAGE, exportCommand } from './export.js';
import { check, CHECK_USAGE, readStdin } from './check.js';
import { CHECK_CONFIG_USAGE, checkConfig } from './check-config.js';
import { bufferedOutput } from './io.js';
import { operator, OPERATOR_USAGE } from './operator.js';
import { REPLAY_USAGE, replay } from './replay.js';
import { START_USAGE, start } from './start.js';
import { terminalLines } from './table.js';

const VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  }
).version;

const USAGE = `usage:
  ${START_USAGE}
  ${REPLAY_USAGE}
  ${CHECK_CONFIG_USAGE}
  ${CHECK_USAGE}
  ${CA_USAGE}
  ${EXPORT_USAGE}
  ${OPERATOR_USAGE.join('\n  ')}`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const out = bufferedOutput(process.stdout, process.stderr);
  // Errors and check's refusals quote agents' targets: made safe for a terminal.
  const log = (line: string) => process.stderr.write(terminalLines(line) + '\n');
  try {
    switch (command) {
      case 'start':
        return await start(rest, log);
      case 'replay':
        return await replay(rest, out);
      case 'ca':
        return await ca(rest, (line) => process.stdout.write(line + '\n'));
      case 'export':
        return exportCommand(rest, (line) => process.stdout.write(line + '\n'), VERSION);
      case 'check':
        return await check(rest, {
          out: (text) => process.stdout.write(text + '\n'),
          err: log,
          stdin: readStdin,
        });
      case 'check-config':
        return checkConfig(rest, (line) => process.stdout.write(line + '\n'));
      case 'sessions':
      case 'events':
      case 'approve':
      case 'resume':
      case 'deny':
        return await operator(command, rest, (line) => process.stdout.write(line + '\n'));
      case 'help':
      case '--help':
      case '-h':
        process.stdout.write(USAGE + '\n');
        return 0;
      default:
        log(command === undefined ? USAGE : `trajgate: unknown command "${command}"\n${USAGE}`);
        return 2;
    }
  } catch (err) {
    if (out.progress) process.stderr.write('\n');
    if (errnoCode(err)?.startsWith('ERR_PARSE_ARGS')) {
      log(`trajgate ${command}: ${(err as Error).message}\n${USAGE}`);
      return 2;
    }
    if (!isTrajgateError(err)) throw err;
    log(`trajgate: ${err.message}`);
    for (const detail of err.details) log(`  ${detail}`);
    return err.code === 'E_USAGE' ? 2 : 1;
  } finally {
    await out.flush();
  }
}

process.exitCode = await main(process.argv.slice(2));
