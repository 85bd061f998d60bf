import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach } from 'vitest';
import { stringify } from 'yaml';
import type { Lookup } from '../../src/action/egress.js';
import { loadConfigFile } from '../../src/config/load.js';
import type { RunningGateway } from '../../src/gateway.js';
import { startGateway } from '../../src/gateway.js';
import type { JournalRecord } from '../../src/journal/records.js';
import { withTestEngine } from './engine.js';
import { readRecords } from './gateway.js';
import { tempDir } from './tmp.js';

/** A gateway started from a config file it can read again (POST /api/reload, SIGHUP). */
export interface FileGateway {
  readonly gw: RunningGateway;
  readonly file: string;
  readonly journal: string;
  /** Replaces the file's keys (over the base) with `extra`. */
  write(extra: Record<string, unknown>): void;
  records(): JournalRecord[];
}

let running: RunningGateway | undefined;
afterEach(async () => {
  await running?.stop();
  running = undefined;
});

/**
 * One gateway per test from a config file on loopback listeners (port 0) with `admin` as its
 * token and `policy.pause: block`, `extra` merged over that; stopped after the test.
 */
export async function fileGateway(
  admin: string,
  extra: Record<string, unknown>,
  options: { readonly lookup?: Lookup } = {},
): Promise<FileGateway> {
  const dir = tempDir();
  const workspace = tempDir('trajgate-ws-');
  const file = join(dir, 'trajgate.yaml');
  const journal = join(dir, 'journal.jsonl');
  const write = (keys: Record<string, unknown>) =>
    writeFileSync(
      file,
      stringify(
        withTestEngine({
          version: 1,
          workspace,
          journal,
          listen: { proxy: '127.0.0.1:0', bridge: '127.0.0.1:0', admin: '127.0.0.1:0' },
          admin: { token: admin },
          policy: { pause: 'block' },
          ...keys,
        }),
      ),
    );
  write(extra);
  running = await startGateway(loadConfigFile(file), {
    log: pino({ level: 'silent' }),
    ...(options.lookup ? { lookup: options.lookup } : {}),
  });
  return { gw: running, file, journal, write, records: () => readRecords(journal) };
}
