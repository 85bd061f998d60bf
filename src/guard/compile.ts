import { OwnFiles } from '../config/own-files.js';
import type { Shape, Slice } from '../config/parts.js';
import type { Approval } from './approvals.js';
import { compileApproval } from './approvals.js';
import { compileDeny } from './denies.js';
import type { Boundary, Budget, GuardPolicy, Matcher, Sequence } from './compiled-policy.js';
import { compileTargets } from './policy.js';
import type { RawMatcher, RawSequence } from '../config/sequences-schema.js';
import type { RawBudget } from '../config/budgets-schema.js';
import { MEASURES } from '../config/budgets-schema.js';

/**
 * What the guard's policy is compiled from. `bridge.unmapped` is there as the `tool` boundary
 * it makes at load (config/load.ts withToolBoundary); the journal's folder, the CA and the config
 * file are trajgate's own files.
 */
export const POLICY = {
  policy: ['countBy', 'boundaries', 'sequences', 'budgets'],
  network: ['allow', 'deny'],
  agents: true,
  roles: true,
  workspace: true,
  bridge: ['unmapped'],
  journal: ['path'],
  tls: ['ca'],
  source: true,
} as const satisfies Shape;

export type PolicyConfig = Slice<typeof POLICY>;

/**
 * Builds everything the guard takes from a validated configuration (patterns already checked):
 * boundaries, trajectory rules, workspaces, the allowlists (global, per agent, per role) and
 * `network.deny`, trajgate's own files (their identities read from the disk now).
 * A reload swaps the result in whole (Guard.replacePolicy).
 */
export function compilePolicy(config: PolicyConfig): GuardPolicy {
  const boundaries: Boundary[] = Object.entries(config.policy.boundaries).map(([name, b]) => ({
    name,
    kinds: new Set(b.kinds),
    outside: b.outside ?? null,
    targets: b.targets
      ? compileTargets(b.targets, b.kinds.includes('network') ? 'all' : 'none')
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
    sequences: compileSequences(config.policy.sequences),
    budgets: config.policy.budgets.map(compileBudget),
    allow,
    deny,
    protected: new OwnFiles(config),
    allowlistFor: (session) => [
      ...new Set([...config.network.allow, ...(lists.get(session) ?? [])]),
    ],
    workspaceFor: (session) => workspaces.get(session) ?? config.workspace,
  };
}

/** `policy.sequences`, validated: matchers' targets compile as a boundary's do. */
function compileSequences(raw: readonly RawSequence[]): Sequence[] {
  return raw.map((r): Sequence => {
    if (r.volume !== undefined) {
      return {
        type: 'volume',
        name: r.name,
        verdict: r.verdict,
        up: r.volume.up.n,
        upText: r.volume.up.text,
        windowMs: r.volume.within.ms,
        windowText: r.volume.within.text,
        // Bytes sent upstream are egress: by default the rule judges further egress only, so
        // a session past the threshold can still read and edit its own files.
        then: compileMatcher(r.then ?? { kind: ['network'] }),
      };
    }
    const after = compileMatcher(r.after ?? {});
    return {
      type: 'sequence',
      name: r.name,
      verdict: r.verdict,
      after,
      then: compileMatcher(r.then ?? {}),
      within: r.within ?? null,
      onFailure: after.failed === true,
    };
  });
}

/** A validated budget: its one measure, its limit and window. */
function compileBudget(r: RawBudget): Budget {
  const measure = MEASURES.find((m) => r[m] !== undefined) ?? 'requests';
  const limit = r[measure] ?? { n: 1, text: '1' };
  return {
    name: r.name,
    measure,
    limit: limit.n,
    limitText: limit.text,
    windowMs: r.within.ms,
    windowText: r.within.text,
    verdict: r.verdict,
  };
}

function compileMatcher(m: RawMatcher): Matcher {
  const kinds = m.kind === undefined ? null : new Set(m.kind);
  const network = kinds === null ? 'parseable' : kinds.has('network') ? 'all' : 'none';
  return {
    kinds,
    targets: m.target === undefined ? null : compileTargets(m.target, network),
    failed: m.failed ?? null,
    refused: m.refused ?? null,
    crossing: m.crossing ?? null,
    approved: m.approved ?? null,
  };
}
