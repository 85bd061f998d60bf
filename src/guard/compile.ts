import type { Config } from '../config/load.js';
import type { Approval } from './approvals.js';
import { compileApproval } from './approvals.js';
import { compileDeny } from './denies.js';
import { globMatcher } from './glob.js';
import { parseNetworkPattern } from '../event/network-pattern.js';
import type { Boundary, GuardPolicy } from './policy.js';

/**
 * Builds everything the guard takes from a validated configuration (patterns already checked):
 * boundaries, workspaces, the allowlists (global, per agent, per role) and `network.deny`.
 * A reload swaps the result in whole (Guard.replacePolicy).
 */
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
  const agents = config.agents ?? [];
  const workspaces = new Map(agents.map((a) => [a.id, a.workspace]));
  const allow: Approval[] = [];
  const entry = (pattern: string, source: string, session: string | null) =>
    allow.push(
      compileApproval({ pattern, origin: 'config', source, session, id: `c${allow.length + 1}` }),
    );
  for (const pattern of config.network.allow) entry(pattern, 'network.allow', null);
  const lists = new Map<string, string[]>();
  for (const a of agents) {
    const own: string[] = [];
    for (const pattern of a.allow) {
      entry(pattern, `agents.${a.id}.allow`, a.id);
      own.push(pattern);
    }
    for (const role of a.roles) {
      for (const pattern of config.roles[role]?.allow ?? []) {
        entry(pattern, `roles.${role}.allow`, a.id);
        own.push(pattern);
      }
    }
    lists.set(a.id, own);
  }
  const deny = config.network.deny.map((pattern, i) =>
    compileDeny({ pattern, origin: 'config', id: `cd${i + 1}` }),
  );
  return {
    countBy: config.policy.countBy,
    boundaries,
    allow,
    deny,
    allowlistFor: (session) => [
      ...new Set([...config.network.allow, ...(lists.get(session) ?? [])]),
    ],
    workspaceFor: (session) => workspaces.get(session) ?? config.workspace,
  };
}
