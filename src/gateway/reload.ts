import { createHash } from 'node:crypto';
import { dirname, resolve } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config/load.js';
import { EMBEDDED_DEFAULT, parseConfig, readConfigFile } from '../config/load.js';
import { dataInWorkspaces } from '../config/own-files.js';
import { isTrajgateError, TrajgateError } from '../errors.js';
import type { JournalWriter } from '../journal/writer.js';
import type { ConfigParts } from './config-parts.js';

export interface ReloadResult {
  readonly reloaded: true;
  readonly file: string;
  readonly sha256: string;
  /** Keys that changed but take effect only after a restart (their old values still run). */
  readonly restartNeeded: readonly string[];
  /** Live flows (requests, tunnels) the new config no longer allows, closed. */
  readonly closed: number;
}

/**
 * A reload the file or the journal refused, as the admin API answers it: 400 for a config that
 * cannot be used (E_CONFIG_*, with its details), 503 when the journal cannot record it.
 */
export function reloadRefusal(err: unknown): never {
  if (!isTrajgateError(err)) throw err;
  throw new TrajgateError(err.code, `${err.message}; the running config was kept`, err.details);
}

/** What a reload changes, and what it does once the change is in. */
export interface ReloadTargets {
  readonly parts: ConfigParts;
  readonly journal: JournalWriter;
  readonly log: Logger;
  /** Closes the live flows whose basis the new config took away; returns how many. */
  settle(): number;
}

/**
 * Re-reads the config file (SIGHUP, POST /api/reload) and hands each part of the gateway its
 * changed slice (ConfigParts): every change is prepared first (a CA to load, a PEM to read), the
 * `config` record journaled, then all are installed in one synchronous step, so no request is
 * judged by half of each. The parts that cannot change keep their running values and their keys
 * are listed as `restartNeeded`; everything else in the file takes effect. Counts, pauses and
 * approvals live in the guard and journal, not the config, and stay. A file that does not
 * validate, or whose workspaces would hold trajgate's data as it runs, changes nothing. Live
 * flows whose basis the new config took away (pipeline/flow-basis) close before the reload is
 * answered. Reloads run one at a time.
 */
export class Reloader {
  #last: Promise<unknown> = Promise.resolve();

  constructor(private readonly targets: ReloadTargets) {}

  reload(by: string): Promise<ReloadResult> {
    const run = this.#last.then(
      () => this.#reload(by),
      () => this.#reload(by),
    );
    this.#last = run.catch(() => undefined);
    return run;
  }

  async #reload(by: string): Promise<ReloadResult> {
    const { parts, journal, log } = this.targets;
    const file = parts.running.source;
    const { loaded, sha256 } = readAgain(file, (config) => parts.plan(config).next);
    const plan = parts.plan(loaded);
    const { restartNeeded } = plan;
    const prepared = await parts.prepare(plan);
    try {
      journal.append({ type: 'config', file, sha256, by, restartNeeded });
    } catch (err) {
      prepared.discard();
      throw err;
    }
    prepared.install();
    const closed = this.targets.settle();
    log.info({ file, sha256, restartNeeded, closed, by }, 'config reloaded');
    return { reloaded: true, file, sha256, restartNeeded, closed };
  }
}

/**
 * Reads and validates the config file again. Throws TrajgateError (E_CONFIG_*) with every
 * problem when it cannot be used: the workspaces are checked against the data paths that would
 * run (`next`: restart-needed keys keep their running values).
 */
function readAgain(
  file: string,
  next: (loaded: Config) => Config,
): { loaded: Config; sha256: string } {
  if (file === EMBEDDED_DEFAULT) {
    throw new TrajgateError(
      'E_CONFIG_READ',
      'started on the embedded default: there is no config file to read again (start with --config FILE)',
    );
  }
  const bytes = readConfigFile(file);
  const loaded = parseConfig(bytes.toString('utf8'), file, dirname(resolve(file)), process.env, {
    checks: (config) => dataInWorkspaces(next(config)),
  });
  return { loaded, sha256: createHash('sha256').update(bytes).digest('hex') };
}
