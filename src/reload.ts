import type { Logger } from 'pino';
import type { Egress } from './action/egress.js';
import type { HeldRequests } from './action/hold.js';
import type { FlowRegistry } from './action/flow-registry.js';
import type { Config } from './config/load.js';
import type { RunningConfig } from './config/reload-plan.js';
import { planReload } from './config/reload-plan.js';
import { isTrajgateError, TrajgateError } from './errors.js';
import { compilePolicy } from './guard/compile.js';
import type { Guard } from './guard/guard.js';
import type { Identity } from './ingress/identity.js';
import type { Rebuilt } from './ingress/proxy-parts.js';
import type { JournalWriter } from './journal/writer.js';
import { rejudgeFlows } from './pipeline/flow-basis.js';
import type { AdminKeys } from './review/admin-token.js';
import { adminTokens } from './review/admin-token.js';

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

/** What a reload changes: everything that holds a piece of the config. */
export interface ReloadTargets {
  readonly config: RunningConfig;
  readonly guard: Guard;
  readonly journal: JournalWriter;
  readonly identity: Identity;
  readonly egress: Egress;
  readonly held: HeldRequests;
  readonly flows: FlowRegistry;
  readonly keys: AdminKeys;
  readonly log: Logger;
  /** Builds what cannot change in place (the forwarder's pools, the TLS interceptor). */
  rebuild(next: Config, running: Config): Promise<Rebuilt>;
}

/**
 * Re-reads the config file (SIGHUP, POST /api/reload) and swaps the running config for it in
 * one synchronous step, so no request is judged by half of each: policy, allowlists, agents
 * and admin tokens, the intercept list, limits. Counts, pauses and approvals live in the guard
 * and journal, not the config, and stay. A file that does not validate changes nothing. The
 * `config` record is written before the swap; live flows whose basis the new config took away
 * (pipeline/flow-basis) close before the reload is answered.
 * Reloads run one at a time.
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
    const t = this.targets;
    const plan = planReload(t.config);
    const policy = compilePolicy(plan.next);
    const tokens = adminTokens(plan.next).tokens;
    const rebuilt = await t.rebuild(plan.next, t.config);
    const file = t.config.source;
    try {
      t.journal.append({
        type: 'config',
        file,
        sha256: plan.sha256,
        by,
        restartNeeded: plan.restartNeeded,
      });
    } catch (err) {
      rebuilt.discard();
      throw err;
    }
    Object.assign(t.config, plan.next);
    t.guard.replacePolicy(policy);
    const rotated = t.identity.replace(plan.next.agents);
    t.egress.configure({
      allowPrivate: plan.next.network.allowPrivate,
      timeoutMs: plan.next.limits.connectTimeout,
    });
    t.held.setTimeout(plan.next.policy.holdTimeout);
    t.flows.setHoldTimeout(plan.next.policy.holdTimeout);
    t.keys.replace(tokens);
    rebuilt.install();
    const closed = rejudgeFlows(t, 'config reloaded', { rotated });
    // Held requests came with the credentials that changed: none of them is ever sent.
    const stale = rotated === 'all' ? t.held.sessions() : [...rotated];
    for (const session of stale) t.held.release(session, 'credentials');
    t.log.info(
      { file, sha256: plan.sha256, restartNeeded: plan.restartNeeded, closed, by },
      'config reloaded',
    );
    return { reloaded: true, file, sha256: plan.sha256, restartNeeded: plan.restartNeeded, closed };
  }
}
