import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { TrajgateError } from '../../src/errors.js';
import { parseConfig } from '../../src/config/load.js';
import type { Source } from '../../src/event/event.js';
import { normalizeEvent } from '../../src/event/normalize.js';
import { compilePolicy } from '../../src/guard/compile.js';
import { formatVerdict, Guard } from '../../src/guard/guard.js';
import type { EncodedSession } from '../../src/guard/state-codec.js';
import { decodeSession, encodeSession } from '../../src/guard/state-codec.js';
import { MemoryStore } from '../../src/guard/store.js';
import { restoreGuard } from '../../src/review/snapshot.js';
import { recordFields } from '../../src/journal/json.js';
import { applyRecord } from '../../src/journal/rebuild.js';
import type { JournalRecord, Unstamped } from '../../src/journal/records.js';
import { eventRecord } from '../../src/journal/records.js';
import { layout, tempDir } from '../helpers/tmp.js';

/**
 * Budgets (`policy.budgets`): each case is a table of steps (events with the verdict expected,
 * outcomes' bytes, operators' top-ups and resumes), journaled as the gateway writes them; a
 * restart (applyRecord of the lines) must rebuild the same state, and the state must survive
 * a snapshot's encoding.
 */
const tmp = tempDir();
layout(tmp, ['ws']);
const WS = join(tmp, 'ws');
const MIN = 60_000;

interface Step {
  /** A network event to this URL (source proxy). */
  net?: string;
  /** A tool call: a read of this file in the workspace (source bridge). */
  tool?: string;
  /** Time (ms); default one second after the last step. */
  at?: number;
  expect?: string;
  rule?: string | null;
  reason?: string;
  /** Bytes the last request sent up (its outcome), as its total so far. */
  bytesUp?: number;
  /** What the outcome answers: open flows are judged again (a budget was reached). */
  rejudge?: boolean;
  topUp?: [string, number];
  resume?: true;
  /** Budget name → used, after the step. */
  used?: Record<string, number>;
}

function guardFor(budgets: object[], extra: object = {}): Guard {
  const config = parseConfig(
    stringify({
      version: 1,
      workspace: WS,
      network: { allow: ['*.example.com'] },
      policy: { budgets, ...extra },
    }),
    'test',
    tmp,
  );
  return new Guard(compilePolicy(config));
}

function line(seq: number, ts: number, record: Unstamped<JournalRecord>): JournalRecord {
  const text = `{"seq":${seq},"ts":"${new Date(ts).toISOString()}",${recordFields(record)}`;
  expect(text).toBe(JSON.stringify({ seq, ts: new Date(ts).toISOString(), ...record }));
  return JSON.parse(text) as JournalRecord;
}

function stateOf(g: Guard) {
  return [...g.sessions()].map(([id, s]) => [id, encodeSession(s)]);
}

function run(budgets: object[], steps: Step[]): { guard: Guard; journal: JournalRecord[] } {
  const guard = guardFor(budgets);
  const journal: JournalRecord[] = [];
  let ts = 1_000_000;
  let last = 0;
  steps.forEach((step, i) => {
    const at = `step ${i + 1}`;
    ts = step.at ?? ts + 1000;
    const seq = journal.length + 1;
    if (step.net !== undefined || step.tool !== undefined) {
      const [kind, target, source]: [string, string, Source] =
        step.net !== undefined
          ? ['network', step.net, 'proxy']
          : ['read', join(WS, step.tool as string), 'bridge'];
      const event = normalizeEvent({ kind, target }, { session: 's', source, ts, workspace: WS });
      const d = guard.inspect(event);
      guard.commit('s', ts, d, { seq, kind, target });
      journal.push(line(seq, ts, eventRecord(event, d)));
      last = seq;
      if (step.expect !== undefined)
        expect(formatVerdict(d), `${at}: ${d.reason}`).toBe(step.expect);
      if (step.rule !== undefined) expect(d.rule?.name ?? null, `${at} rule`).toBe(step.rule);
      if (step.reason !== undefined) expect(d.reason, `${at} reason`).toContain(step.reason);
    } else if (step.bytesUp !== undefined) {
      const again = guard.outcome('s', last, { failed: false, bytesUp: step.bytesUp, ts });
      if (step.rejudge !== undefined) expect(again, `${at} rejudge`).toBe(step.rejudge);
      const outcome = { type: 'outcome' as const, rid: last, session: 's', status: 200 };
      journal.push(
        line(seq, ts, { ...outcome, bytesUp: step.bytesUp, bytesDown: 0, durationMs: 1 }),
      );
    } else if (step.topUp !== undefined) {
      const [budget, amount] = step.topUp;
      guard.topUp('s', budget, amount, ts);
      journal.push(line(seq, ts, { type: 'topup', session: 's', budget, amount, by: 'op' }));
    } else if (step.resume) {
      guard.resume('s', false, true);
      journal.push(
        line(seq, ts, { type: 'resume', session: 's', reset: false, keepMarks: true, by: 'op' }),
      );
    }
    for (const [name, n] of Object.entries(step.used ?? {}))
      expect(guard.session('s')?.budgets.get(name)?.used ?? 0, `${at} ${name} used`).toBe(n);
  });
  return { guard, journal };
}

const CALLS = { name: 'calls', requests: 3, within: '1h', verdict: 'PAUSE' };
const API = 'https://api.example.com/v1';

const CASES: [string, object[], Step[]][] = [
  [
    'requests: the one past the limit pauses and counts nothing; a top-up raises it in the window',
    [CALLS],
    [
      { net: API, expect: 'ALLOW', used: { calls: 1 } },
      { tool: 'a.txt', expect: 'ALLOW', used: { calls: 2 } },
      { net: API, expect: 'ALLOW', used: { calls: 3 } },
      {
        net: API,
        expect: 'PAUSE: budget',
        rule: 'calls',
        reason: 'budget calls: network to api.example.com:443 after 3 of 3 requests used within 1h',
        used: { calls: 3 },
      },
      { topUp: ['calls', 2], used: { calls: 3 } },
      { resume: true },
      { net: API, expect: 'ALLOW', used: { calls: 4 } },
      { net: API, expect: 'ALLOW', used: { calls: 5 } },
      {
        net: API,
        expect: 'PAUSE: budget',
        reason: '5 of 5 requests used within 1h, 3 + 2 topped up',
      },
    ],
  ],
  [
    'a new window starts from zero and drops the top-ups of the last',
    [{ ...CALLS, requests: 1, within: '10m' }],
    [
      { net: API, at: 1_000_000, expect: 'ALLOW' },
      { topUp: ['calls', 1] },
      { net: API, expect: 'ALLOW', used: { calls: 2 } },
      { net: API, expect: 'PAUSE: budget' },
      { resume: true },
      { net: API, at: 1_000_000 + 10 * MIN, expect: 'ALLOW', used: { calls: 1 } },
      { net: API, expect: 'PAUSE: budget', reason: '1 of 1 requests' },
    ],
  ],
  [
    'toolCalls counts tool calls only; REVIEW answers, and goes on answering past the limit',
    [{ name: 'tools', toolCalls: 1, within: '1h', verdict: 'REVIEW' }],
    [
      { tool: 'a', expect: 'ALLOW', used: { tools: 1 } },
      { net: API, expect: 'ALLOW', used: { tools: 1 } },
      { tool: 'b', expect: 'REVIEW: budget', rule: 'tools', used: { tools: 1 } },
      { tool: 'c', expect: 'REVIEW: budget' },
      { topUp: ['tools', 1] },
      { tool: 'c', expect: 'ALLOW', used: { tools: 2 } },
    ],
  ],
  [
    'hosts counts distinct hosts in the window; a host seen goes on',
    [{ name: 'hosts', hosts: 2, within: '1h' }],
    [
      { net: 'https://a.example.com/', expect: 'ALLOW', used: { hosts: 1 } },
      { net: 'https://a.example.com/x', expect: 'ALLOW', used: { hosts: 1 } },
      { net: 'https://b.example.com/', expect: 'ALLOW', used: { hosts: 2 } },
      { tool: 'a', expect: 'ALLOW' },
      {
        net: 'https://c.example.com/',
        expect: 'PAUSE: budget',
        reason: '2 of 2 hosts used',
      },
      { topUp: ['hosts', 1] },
      { resume: true },
      { net: 'https://a.example.com/', expect: 'ALLOW', used: { hosts: 2 } },
      { net: 'https://c.example.com/', expect: 'ALLOW', used: { hosts: 3 } },
      { net: 'https://d.example.com/', expect: 'PAUSE: budget' },
    ],
  ],
  [
    'bytesUp: outcomes count what each request adds; network events pause once it is reached',
    [{ name: 'up', bytesUp: '1KB', within: '1h' }],
    [
      { net: API, expect: 'ALLOW' },
      { bytesUp: 600, used: { up: 600 }, rejudge: false },
      { bytesUp: 700, used: { up: 700 }, rejudge: false },
      { net: API, expect: 'ALLOW' },
      { bytesUp: 300, used: { up: 1000 }, rejudge: true },
      { tool: 'a', expect: 'ALLOW' },
      { net: API, expect: 'PAUSE: budget', reason: '1000 of 1000 bytes sent up within 1h' },
      { topUp: ['up', 500] },
      { resume: true },
      { net: API, expect: 'ALLOW' },
    ],
  ],
  [
    'the most severe budget answers; a PAUSE by another counts toward none',
    [
      { name: 'soft', requests: 1, within: '1h', verdict: 'REVIEW' },
      { name: 'hard', requests: 2, within: '1h', verdict: 'PAUSE' },
    ],
    [
      { net: API, expect: 'ALLOW', used: { soft: 1, hard: 1 } },
      { net: API, expect: 'REVIEW: budget', rule: 'soft', used: { soft: 1, hard: 1 } },
      // As severe as the count: the budget names it; the network crossing is counted.
      { net: 'https://evil.test/', expect: 'REVIEW: budget', reason: 'also REVIEW' },
      { net: 'https://evil.test/', expect: 'PAUSE: network', used: { soft: 1, hard: 1 } },
    ],
  ],
];

describe('budgets in the guard', () => {
  it.each(CASES)('%s', (_, budgets, steps) => {
    const { guard, journal } = run(budgets, steps);
    // A restart: the journal's lines applied to a fresh guard rebuild the same state.
    const rebuilt = guardFor(budgets);
    for (const record of journal) applyRecord(rebuilt, record);
    expect(stateOf(rebuilt)).toEqual(stateOf(guard));
    // A snapshot keeps it whole: encoded, then restored into a fresh guard.
    const [id, encoded] = stateOf(guard)[0] as [string, EncodedSession];
    expect(encodeSession(decodeSession(JSON.parse(JSON.stringify(encoded)), id))).toEqual(encoded);
    const store = new MemoryStore();
    const restored = new Guard(guardFor(budgets).policy, store);
    const snapshot = {
      sessions: [[id, JSON.parse(JSON.stringify(encoded))]],
      approvals: [],
      denies: [],
    };
    restoreGuard(snapshot as never, restored, store);
    expect(stateOf(restored)).toEqual(stateOf(guard));
  });

  it('a top-up of a budget not configured is E_UNKNOWN_BUDGET naming those there are', () => {
    const guard = guardFor([CALLS]);
    expect(() => guard.topUp('s', 'call', 1, 0)).toThrow(
      'no budget "call" in policy.budgets (budgets: calls)',
    );
  });

  it('an older snapshot without budgets decodes; a malformed entry is E_STORE_CORRUPT', () => {
    const guard = run([CALLS], [{ net: API }]).guard;
    const { budgets: _, ...old } = encodeSession(guard.session('s') as never);
    expect(decodeSession(old, 'k').budgets.size).toBe(0);
    expect(() => decodeSession({ ...old, budgets: [['calls', 1, -1, 0, null]] }, 'k')).toThrow(
      'k: "budgets" holds a malformed entry',
    );
  });

  it('a journaled event with a malformed "budgeted" is a corrupt journal', () => {
    const { journal } = run([CALLS], [{ net: API }]);
    const record = { ...journal[0], budgeted: { calls: { start: 'x', used: 1 } } } as never;
    expect(() => applyRecord(guardFor([CALLS]), record)).toThrow(
      'event record has a bad "budgeted"',
    );
  });
});

describe('policy.budgets in the config', () => {
  const problems = (budgets: unknown, extra: object = {}) => {
    try {
      guardFor(budgets as object[], extra);
      return '';
    } catch (err) {
      return [(err as Error).message, ...(err as TrajgateError).details].join('\n');
    }
  };

  it.each([
    [
      [{ name: 'x', within: '1h' }],
      'policy.budgets[0] (x): needs one measure: requests, bytesUp, toolCalls, hosts',
    ],
    [
      [{ name: 'x', requests: 1, hosts: 2, within: '1h' }],
      'policy.budgets[0] (x).hosts: takes one measure, got requests and hosts',
    ],
    [
      [{ name: 'x', requests: 0, within: '1h' }],
      'policy.budgets[0] (x).requests: expected a whole number of at least 1, got number 0',
    ],
    [
      [{ name: 'x', bytesUp: '10 parsecs', within: '1h' }],
      'policy.budgets[0] (x).bytesUp: expected bytes like 10MB',
    ],
    [
      [{ name: 'x', requests: 5, within: 'soon' }],
      'policy.budgets[0] (x).within: expected a duration like 30s',
    ],
    [[{ name: 'x', requests: 5 }], 'policy.budgets[0] (x).within'],
    [[{ name: 'x', requests: 5, within: '1h', verdict: 'ALLOW' }], 'policy.budgets[0] (x).verdict'],
    [
      [{ name: 'x', requests: 5, within: '1h', limit: 3 }],
      'policy.budgets[0] (x).limit: unknown key',
    ],
    [
      [CALLS, { ...CALLS, hosts: undefined }],
      'policy.budgets[1] (calls).name: duplicates policy.budgets[0] (calls)',
    ],
    [
      [{ ...CALLS, name: 'network' }],
      'policy.budgets[0] (network).name: is a boundary: name it otherwise',
    ],
    [[{ ...CALLS, name: 'budget' }], "policy.budgets[0] (budget).name: is trajgate's own boundary"],
    [
      [{ ...CALLS, name: 'tool-changed' }],
      "policy.budgets[0] (tool-changed).name: is trajgate's own boundary",
    ],
  ])('%j is refused: %s', (budgets, message) => {
    expect(problems(budgets)).toContain(message);
  });

  it('a budget named as a trajectory rule is refused; verdict defaults to PAUSE', () => {
    const rule = { name: 'calls', volume: { up: '1MB', within: '1h' }, verdict: 'REVIEW' };
    expect(problems([CALLS], { sequences: [rule] })).toContain(
      'policy.budgets[0] (calls).name: is a rule of policy.sequences: name it otherwise',
    );
    const guard = guardFor([{ name: 'c', requests: 1, within: '1h' }]);
    expect(guard.policy.budgets).toEqual([
      {
        name: 'c',
        measure: 'requests',
        limit: 1,
        limitText: '1',
        windowMs: 3_600_000,
        windowText: '1h',
        verdict: 'PAUSE',
      },
    ]);
  });
});
