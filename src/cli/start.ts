import { parseArgs } from 'node:util';
import { defaultConfig, loadConfigFile } from '../config/load.js';
import { compilePolicy } from '../guard/compile.js';
import { Guard } from '../guard/guard.js';
import { openJournal } from '../journal/open.js';

export const START_USAGE = 'trajgate start [--config FILE]';

/**
 * Runs the gateway: loads the config (or the embedded default), rebuilds state from the
 * journal, and keeps the journal open until SIGTERM or SIGINT, when it syncs and exits 0.
 */
export async function start(argv: string[], log: (line: string) => void): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { config: { type: 'string' } } });
  const config = values.config === undefined ? defaultConfig() : loadConfigFile(values.config);
  const guard = new Guard(compilePolicy(config));
  const { writer, restored } = openJournal(config.journal, guard, {
    fsyncMs: config.journalFsync,
    warn: (m) => log(`warning: ${m}`),
  });
  const paused = [...guard.sessions()].filter(([, s]) => s.pausedAt !== null).length;
  log(`trajgate: config ${config.source}; workspace ${config.workspace}`);
  log(
    `trajgate: journal ${config.journal} (${restored} records restored, ${paused} session(s) paused)`,
  );
  // No listener holds the event loop yet, so a periodic sync does.
  const alive = setInterval(() => writer.sync(), 1000);
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
  clearInterval(alive);
  writer.close();
  log('trajgate: stopped; journal synced');
  return 0;
}
