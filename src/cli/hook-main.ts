// `trajgate check` as CommonJS (built to dist/hook/ by tsconfig.hook.json): a runner's hook runs
// it twice per tool call, and a CommonJS program starts without Node's ES module loader (about
// 15 ms of a 100 ms start here). bin/trajgate.cjs runs it for `check` without --config or
// --help; the usage text, needed only for a usage error, comes from the ES build through `esm`.
import { errnoCode } from '../errors.js';
import { check, readStdin } from './check.js';
import { terminalLines } from './table.js';

/** A module of the ES build, by its path under dist/. */
type EsModule = (file: string) => Promise<unknown>;

export function main(argv: string[], esm: EsModule): void {
  // As main.ts: a reader that stops early is no failure of ours.
  process.stdout.on('error', (err) => {
    if (errnoCode(err) === 'EPIPE') process.exit(0);
  });
  const usage = async () =>
    ((await esm('cli/help.js')) as { usageLine(command: string): string }).usageLine('check');
  void check(argv, {
    out: (line) => process.stdout.write(line + '\n'),
    // Refusals quote agents' targets: made safe for a terminal.
    err: (line) => process.stderr.write(terminalLines(line) + '\n'),
    stdin: readStdin,
    usage,
    // bin/trajgate.cjs sends check with --config to the ES build.
    bridgeOf: () => Promise.reject(new Error('--config is read by the ES build')),
  }).then((code) => {
    process.exitCode = code;
  });
}
