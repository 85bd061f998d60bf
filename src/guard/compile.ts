import type { Config } from '../config/load.js';
import { compileApproval } from './approvals.js';
import { globMatcher } from './glob.js';
import { parseNetworkPattern } from './network-pattern.js';
import type { Boundary, GuardPolicy } from './policy.js';

/** Builds the guard's policy from a validated configuration (patterns already checked). */
export function compilePolicy(config: Config): GuardPolicy {
  const boundaries: Boundary[] = Object.entries(config.policy.boundaries).map(([name, b]) => ({
    name,
    kinds: new Set(b.kinds),
    outside: b.outside ?? null,
    targets: b.targets
      ? {
          glob: globMatcher(b.targets),
          network: b.kinds.includes('network') ? b.targets.map(parseNetworkPattern) : [],
        }
      : null,
    reviewAt: b.reviewAt ?? null,
    pauseAt: b.pauseAt,
  }));
  const workspaces = new Map((config.agents ?? []).map((a) => [a.id, a.workspace]));
  return {
    countBy: config.policy.countBy,
    boundaries,
    allow: config.network.allow.map((pattern) => compileApproval({ pattern, origin: 'config' })),
    workspaceFor: (session) => workspaces.get(session) ?? config.workspace,
  };
}
