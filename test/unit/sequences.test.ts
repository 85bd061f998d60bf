import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { parseConfig } from '../../src/config/load.js';
import { normalizeEvent } from '../../src/event/normalize.js';
import { validateRecordedEvent } from '../../src/event/validate.js';
import { compilePolicy } from '../../src/guard/compile.js';
import type { Decision } from '../../src/guard/guard.js';
import { formatVerdict, Guard } from '../../src/guard/guard.js';
import { MemoryStore } from '../../src/guard/store.js';
import { recordFields } from '../../src/journal/json.js';
import { applyRecord, unlinkedResult } from '../../src/journal/rebuild.js';
import type { JournalRecord, Unstamped } from '../../src/journal/records.js';
import { eventRecord } from '../../src/journal/records.js';
import { layout, tempDir } from '../helpers/tmp.js';
import { secretThenEgress } from '../helpers/rules.js';

/**
 * Trajectory rules (`policy.sequences`). Each case is a table of steps: events with
 * the verdict expected, and how requests ended (outcome, result) and operators' resumes. Every
 * step is journaled as the gateway writes it; at the end a restart (applyRecord of the written
 * lines) must rebuild the same state, and a replay of them (events judged again) must give
 * the same verdicts.
 */
const tmp = tempDir();
layout(tmp, ['ws/src', 'home/u/.ssh']);
const WS = join(tmp, 'ws');
const KEY = join(tmp, 'home/u/.ssh/id_ed25519');
const DOCS = 'https://docs.example.com/guide';
const EVIL = 'https://evil.test/upload';

const SECRET = secretThenEgress(['**/.ssh/**', '**/.env']);
const DRIFT = {
  name: 'drift-after-failure',
  after: { failed: true },
  then: { crossing: 'network' },
  within: '2 events',
  verdict: 'PAUSE',
};
const VOLUME = { name: 'egress-volume', volume: { up: '10MB', within: '10m' }, verdict: 'REVIEW' };

interface Step {
  /** Session; default `s`. */
  s?: string;
  /** An event: kind and target. */
  e?: [string, string];
  /** Time (ms) of the step; default one second after the last. */
  at?: number;
  approved?: boolean;
  failed?: boolean;
  /** The event is a read of everything under its target. */
  tree?: boolean;
  expect?: string;
  rule?: { name: string; after?: number } | null;
  reason?: string;
  marks?: string[];
  onFailure?: string[];
  /** How the request of event record `rid` (default: the session's last event) ended. */
  outcome?: { rid?: number; failed?: boolean; bytesUp?: number };
  /** `unlinked`: no call is known for it (rid null). */
  result?: { rid?: number; ok: boolean; unlinked?: string };
  resume?: { reset?: boolean; keepMarks?: boolean };
}

interface Case {
  name: string;
  rules: object[];
  steps: Step[];
}

function guardFor(rules: object[]): Guard {
  const config = parseConfig(
    stringify({
      version: 1,
      workspace: WS,
      network: { allow: ['docs.example.com'] },
      policy: { sequences: rules },
    }),
    'test',
    tmp,
  );
  return new Guard(compilePolicy(config));
}

/** A session's state as plain data, to compare states. */
function stateOf(g: Guard) {
  return [...g.sessions()].map(([id, s]) => ({
    id,
    counts: Object.fromEntries(s.counts),
    pausedAt: s.pausedAt,
    pausedBy: s.pausedBy,
    events: s.events,
    marks: [...s.marks.values()],
    pending: s.pending.values(),
    sent: [...s.sent.entries()],
    sentBytes: s.sentBytes,
  }));
}

/** The journal line the writer makes of a record, read back. */
function line(seq: number, ts: number, record: Unstamped<JournalRecord>): JournalRecord {
  const text = `{"seq":${seq},"ts":"${new Date(ts).toISOString()}",${recordFields(record)}`;
  expect(text).toBe(JSON.stringify({ seq, ts: new Date(ts).toISOString(), ...record }));
  return JSON.parse(text) as JournalRecord;
}

/** Runs a case live, checking each step; returns the journal and the verdicts. */
function live(c: Case): { guard: Guard; journal: JournalRecord[]; verdicts: string[] } {
  const guard = guardFor(c.rules);
  const journal: JournalRecord[] = [];
  const verdicts: string[] = [];
  const last = new Map<string, number>();
  let ts = 0;
  c.steps.forEach((step, i) => {
    const at = `${c.name}, step ${i + 1}`;
    const session = step.s ?? 's';
    ts = step.at ?? ts + 1000;
    const seq = journal.length + 1;
    if (step.e) {
      const [kind, target] = step.e;
      const event = normalizeEvent(
        {
          kind,
          target,
          ...(step.failed ? { failed: true as const } : {}),
          ...(step.tree ? { tree: true as const } : {}),
        },
        { session, source: 'replay', ts, workspace: WS, approved: step.approved === true },
      );
      const d = guard.inspect(event);
      guard.commit(session, ts, d, { seq, kind, target });
      journal.push(line(seq, ts, eventRecord(event, d)));
      last.set(session, seq);
      verdicts.push(formatVerdict(d));
      check(at, d, step);
    } else if (step.outcome) {
      const { rid = last.get(session) as number, failed = false, bytesUp = 0 } = step.outcome;
      guard.outcome(session, rid, { failed, bytesUp, ts });
      const outcome = {
        type: 'outcome' as const,
        rid,
        session,
        status: failed ? 500 : 200,
        bytesUp,
        bytesDown: 0,
        ...(failed ? { failed: true as const } : {}),
        durationMs: 1,
      };
      journal.push(line(seq, ts, outcome));
    } else if (step.result?.unlinked !== undefined) {
      const { ok, unlinked } = step.result;
      const result = {
        type: 'result' as const,
        session,
        rid: null,
        kind: 'command',
        target: WS,
        ok,
        unlinked,
      };
      unlinkedResult(guard, result, seq, ts);
      journal.push(line(seq, ts, result));
    } else if (step.result) {
      const { rid = last.get(session) as number, ok } = step.result;
      guard.outcome(session, rid, { failed: !ok, bytesUp: 0, ts });
      const result = { type: 'result' as const, session, rid, kind: 'command', target: WS, ok };
      journal.push(line(seq, ts, result));
    } else if (step.resume) {
      const { reset = false, keepMarks = false } = step.resume;
      guard.resume(session, reset, keepMarks);
      const keep = keepMarks ? { keepMarks: true as const } : {};
      journal.push(line(seq, ts, { type: 'resume', session, reset, ...keep, by: 'op' }));
    }
  });
  return { guard, journal, verdicts };
}

function check(at: string, d: Decision, step: Step): void {
  if (step.expect !== undefined) expect(formatVerdict(d), `${at}: ${d.reason}`).toBe(step.expect);
  if (step.rule !== undefined) expect(d.rule ?? null, `${at} rule`).toEqual(step.rule);
  if (step.reason !== undefined) expect(d.reason, `${at} reason`).toContain(step.reason);
  if (step.marks !== undefined) expect(d.marks ?? [], `${at} marks`).toEqual(step.marks);
  if (step.onFailure !== undefined)
    expect(d.onFailure ?? [], `${at} onFailure`).toEqual(step.onFailure);
}

/** `trajgate replay` of the journal: events judged again, other records applied. */
function replay(rules: object[], journal: JournalRecord[]): { guard: Guard; verdicts: string[] } {
  const guard = guardFor(rules);
  const verdicts: string[] = [];
  for (const record of journal) {
    if (record.type !== 'event') {
      applyRecord(guard, record);
      continue;
    }
    const { input, approved, approvedBy } = validateRecordedEvent(record, new Set([record.kind]));
    const ts = Date.parse(record.ts);
    const ctx = { session: record.session, source: 'replay' as const, ts, workspace: WS };
    const event = normalizeEvent(input, { ...ctx, approved, approvedBy });
    const d = guard.inspect(event);
    guard.commit(record.session, ts, d, {
      seq: record.seq,
      kind: input.kind,
      target: input.target,
    });
    verdicts.push(formatVerdict(d));
  }
  return { guard, verdicts };
}

const CASES: Case[] = [
  {
    name: 'a key read, then an allowlisted request pauses, citing the read',
    rules: [SECRET],
    steps: [
      { e: ['read', `${WS}/src/a.ts`], expect: 'ALLOW', marks: [] },
      { e: ['read', KEY], expect: 'ALLOW', marks: ['secret-then-egress'] },
      { e: ['write', `${WS}/src/a.ts`], expect: 'ALLOW', rule: null },
      {
        e: ['network', DOCS],
        expect: 'PAUSE: secret-then-egress',
        rule: { name: 'secret-then-egress', after: 2 },
        reason: `secret-then-egress: network to docs.example.com:443 after #2 read ${KEY} (within 1h)`,
      },
    ],
  },
  {
    name: 'within by time: an hour is in reach, an hour and a millisecond is not',
    rules: [SECRET],
    steps: [
      { s: 'a', e: ['read', KEY], at: 0 },
      { s: 'a', e: ['network', DOCS], at: 3_600_000, expect: 'PAUSE: secret-then-egress' },
      { s: 'b', e: ['read', KEY], at: 10_000_000 },
      { s: 'b', e: ['network', DOCS], at: 13_600_001, expect: 'ALLOW', rule: null },
    ],
  },
  {
    name: 'within by events: the second event after a failure is in reach, the third is not',
    rules: [DRIFT],
    steps: [
      { s: 'a', e: ['command', WS], failed: true, expect: 'ALLOW', marks: ['drift-after-failure'] },
      { s: 'a', e: ['read', `${WS}/src/a.ts`] },
      {
        s: 'a',
        e: ['network', EVIL],
        expect: 'PAUSE: drift-after-failure',
        reason: `drift-after-failure: network to evil.test:443 after #1 command ${WS} (within 2 events); also REVIEW: unapproved network access`,
      },
      { s: 'b', e: ['command', WS], failed: true },
      { s: 'b', e: ['read', `${WS}/src/a.ts`] },
      { s: 'b', e: ['read', `${WS}/src/b.ts`] },
      { s: 'b', e: ['network', EVIL], expect: 'REVIEW: network', rule: null },
    ],
  },
  {
    name: 'an approved request is no crossing: drift waits for an unapproved one',
    rules: [DRIFT],
    steps: [
      { e: ['command', WS], failed: true },
      { e: ['network', DOCS], expect: 'ALLOW' },
      { e: ['network', EVIL], expect: 'PAUSE: drift-after-failure' },
    ],
  },
  {
    name: 'a failed outcome marks the event that waited for it; a good one does not',
    rules: [DRIFT],
    steps: [
      { s: 'a', e: ['network', DOCS], expect: 'ALLOW', onFailure: ['drift-after-failure'] },
      { s: 'a', outcome: { failed: true } },
      {
        s: 'a',
        e: ['network', EVIL],
        expect: 'PAUSE: drift-after-failure',
        rule: { name: 'drift-after-failure', after: 1 },
        reason: `after #1 network ${DOCS} (within 2 events)`,
      },
      { s: 'b', e: ['network', DOCS], onFailure: ['drift-after-failure'] },
      { s: 'b', outcome: { failed: false } },
      { s: 'b', e: ['network', EVIL], expect: 'REVIEW: network' },
      // A runner's result says the command failed.
      { s: 'c', e: ['command', WS], onFailure: ['drift-after-failure'] },
      { s: 'c', result: { ok: false } },
      { s: 'c', e: ['network', EVIL], expect: 'PAUSE: drift-after-failure' },
      // A failure report is itself a failure: it marks, it waits for nothing.
      { s: 'd', e: ['command', WS], failed: true, marks: ['drift-after-failure'], onFailure: [] },
    ],
  },
  {
    name: 'a late failure does not move a newer mark back',
    rules: [{ ...DRIFT, within: '1 event' }],
    steps: [
      { e: ['network', DOCS] },
      { e: ['command', WS], failed: true, marks: ['drift-after-failure'] },
      { outcome: { rid: 1, failed: true } },
      {
        e: ['network', EVIL],
        expect: 'PAUSE: drift-after-failure',
        rule: { name: 'drift-after-failure', after: 2 },
      },
    ],
  },
  {
    name: 'the most severe verdict wins; a rule at least as severe as the count names it',
    rules: [
      {
        name: 'read-review',
        after: { kind: 'read' },
        then: { kind: 'network' },
        verdict: 'REVIEW',
      },
      { name: 'also-review', after: { kind: 'read' }, then: {}, verdict: 'REVIEW' },
      {
        name: 'write-pause',
        after: { kind: 'write' },
        then: { kind: 'network' },
        verdict: 'PAUSE',
      },
    ],
    steps: [
      { s: 'a', e: ['read', `${WS}/src/a.ts`] },
      // A tie with the count: the rule names it (the first of two that fire).
      { s: 'a', e: ['network', EVIL], expect: 'REVIEW: read-review', reason: '; also REVIEW:' },
      // The count is more severe: it names it.
      { s: 'a', e: ['network', EVIL], expect: 'PAUSE: network', rule: null },
      { s: 'b', e: ['write', `${WS}/src/a.ts`] },
      { s: 'b', e: ['read', `${WS}/src/a.ts`] },
      // The most severe rule names it, though listed last.
      {
        s: 'b',
        e: ['network', DOCS],
        expect: 'PAUSE: write-pause',
        rule: { name: 'write-pause', after: 4 },
      },
      { s: 'c', e: ['read', `${WS}/src/a.ts`] },
      { s: 'c', e: ['write', `${WS}/src/a.ts`], expect: 'REVIEW: also-review' },
    ],
  },
  {
    name: 'rules judge approved events, but not one an operator let through',
    rules: [SECRET],
    steps: [
      { e: ['read', KEY] },
      { e: ['network', DOCS], approved: true, expect: 'ALLOW', rule: null, marks: [] },
      { e: ['network', DOCS], expect: 'PAUSE: secret-then-egress' },
    ],
  },
  {
    name: 'a resume clears the marks; --keep-marks keeps them',
    rules: [SECRET, DRIFT],
    steps: [
      { s: 'a', e: ['read', KEY] },
      { s: 'a', e: ['network', DOCS], expect: 'PAUSE: secret-then-egress' },
      { s: 'a', resume: {} },
      { s: 'a', e: ['network', DOCS], expect: 'ALLOW' },
      { s: 'b', e: ['read', KEY] },
      { s: 'b', e: ['network', DOCS], expect: 'PAUSE: secret-then-egress' },
      { s: 'b', resume: { keepMarks: true } },
      { s: 'b', e: ['network', DOCS], expect: 'PAUSE: secret-then-egress' },
      // Pending failures go too: a failure reported after the resume marks nothing.
      { s: 'c', e: ['command', WS] },
      { s: 'c', resume: {} },
      { s: 'c', outcome: { rid: 9, failed: true } },
      { s: 'c', e: ['network', EVIL], expect: 'REVIEW: network' },
    ],
  },
  {
    name: 'volume: bytes sent up within the window, before the event',
    rules: [
      { ...VOLUME, then: {} },
      {
        ...VOLUME,
        name: 'net-volume',
        volume: { up: '1MB', within: '1m' },
        then: { kind: 'network' },
      },
    ],
    steps: [
      { e: ['network', DOCS], at: 0 },
      { outcome: { bytesUp: 6_000_000 }, at: 1000 },
      {
        e: ['network', DOCS],
        at: 2000,
        expect: 'REVIEW: net-volume',
        rule: { name: 'net-volume' },
      },
      { e: ['read', `${WS}/src/a.ts`], at: 3000, expect: 'ALLOW' },
      { outcome: { bytesUp: 5_000_000 }, at: 4000 },
      {
        e: ['read', `${WS}/src/a.ts`],
        at: 5000,
        expect: 'REVIEW: egress-volume',
        reason: `egress-volume: read ${WS}/src/a.ts after 11 MB sent up within 10m (limit 10MB)`,
      },
      // Ten minutes after the first outcome, 5 MB are left in the window.
      { e: ['read', `${WS}/src/a.ts`], at: 601_000, expect: 'REVIEW: egress-volume' },
      { e: ['read', `${WS}/src/a.ts`], at: 601_001, expect: 'ALLOW' },
    ],
  },
  {
    name: 'volume without then: only further network requests are judged',
    rules: [VOLUME],
    steps: [
      { e: ['network', DOCS], at: 0 },
      { outcome: { bytesUp: 11_000_000 }, at: 1000 },
      { e: ['read', `${WS}/src/a.ts`], at: 2000, expect: 'ALLOW' },
      { e: ['write', `${WS}/src/a.ts`], at: 3000, expect: 'ALLOW' },
      { e: ['network', DOCS], at: 4000, expect: 'REVIEW: egress-volume' },
    ],
  },
  {
    name: 'matchers on the decision: refused, crossing, approved; targets as network patterns',
    rules: [
      {
        name: 'refused-then-write',
        after: { refused: true },
        then: { kind: 'write' },
        within: '1 event',
        verdict: 'PAUSE',
      },
      {
        name: 'crossed-then-approved',
        after: { crossing: 'network' },
        then: { approved: true },
        verdict: 'REVIEW',
      },
      {
        name: 'to-evil',
        after: { kind: 'read', approved: false },
        then: { kind: 'network', target: ['evil.test'] },
        verdict: 'PAUSE',
      },
    ],
    steps: [
      {
        s: 'a',
        e: ['network', 'https://other.test/'],
        expect: 'REVIEW: network',
        marks: ['refused-then-write', 'crossed-then-approved'],
      },
      { s: 'a', e: ['write', `${WS}/src/a.ts`], expect: 'PAUSE: refused-then-write' },
      { s: 'a', e: ['network', DOCS], expect: 'REVIEW: crossed-then-approved' },
      { s: 'b', e: ['read', `${WS}/src/a.ts`], marks: ['to-evil'] },
      { s: 'b', e: ['network', 'https://other.test/'], expect: 'REVIEW: network' },
      { s: 'b', e: ['network', EVIL], expect: 'PAUSE: to-evil' },
    ],
  },
];

const HOME = join(tmp, 'home');
const TREE_CASES: Case[] = [
  {
    name: 'a tree read of a folder above a secret marks; one beside it does not',
    rules: [{ ...SECRET, after: { kind: 'read', target: [`${HOME}/u/.ssh/**`] } }],
    steps: [
      { s: 'a', e: ['read', `${WS}/src`], tree: true, marks: [] },
      { s: 'a', e: ['read', HOME], marks: [] },
      { s: 'a', e: ['network', DOCS], expect: 'ALLOW' },
      { s: 'a', e: ['read', HOME], tree: true, marks: ['secret-then-egress'] },
      {
        s: 'a',
        e: ['network', DOCS],
        expect: 'PAUSE: secret-then-egress',
        reason: `after #4 read ${HOME} (within 1h)`,
      },
      { s: 'b', e: ['read', tmp], tree: true, marks: ['secret-then-egress'] },
      { s: 'c', e: ['read', `${HOME}/u/.ssh`], tree: true, marks: ['secret-then-egress'] },
    ],
  },
  {
    name: 'a rule with a leading **/ is reached by any tree read',
    rules: [SECRET],
    steps: [
      { e: ['read', `${WS}/src`], tree: true, marks: ['secret-then-egress'] },
      { e: ['network', DOCS], expect: 'PAUSE: secret-then-egress' },
    ],
  },
  {
    name: 'a result of no known call marks every rule waiting for a failure, ok or not',
    rules: [DRIFT],
    steps: [
      { s: 'a', e: ['read', `${WS}/src/a.ts`] },
      { s: 'a', result: { ok: true, unlinked: 'no call "toolu_x" is waiting' } },
      {
        s: 'a',
        e: ['network', EVIL],
        expect: 'PAUSE: drift-after-failure',
        rule: { name: 'drift-after-failure', after: 2 },
        reason: `after #2 command ${WS} (a result of no known call)`,
      },
      { s: 'b', e: ['network', DOCS], onFailure: ['drift-after-failure'] },
      { s: 'b', result: { ok: true } },
      { s: 'b', e: ['network', EVIL], expect: 'REVIEW: network' },
    ],
  },
];

describe('trajectory rules', () => {
  it.each([...CASES, ...TREE_CASES].map((c) => [c.name, c] as const))('%s', (_, c) => {
    const { guard, journal, verdicts } = live(c);
    // A restart installs what the records say: the same state.
    const restarted = guardFor(c.rules);
    for (const record of journal) applyRecord(restarted, record);
    expect(stateOf(restarted)).toEqual(stateOf(guard));
    // A replay judges the events again: the same verdicts, and the same state.
    const replayed = replay(c.rules, journal);
    expect(replayed.verdicts).toEqual(verdicts);
    expect(stateOf(replayed.guard)).toEqual(stateOf(guard));
  });
});

describe('without rules, and with the example config’s', () => {
  const example = parse(
    readFileSync(join(import.meta.dirname, '../../config/trajgate.example.yaml'), 'utf8'),
  ) as { policy: { sequences: object[] } };

  it('the example config has the three rules docs/rules.md shows', () => {
    expect(example.policy.sequences.map((r) => (r as { name: string }).name)).toEqual([
      'secret-then-egress',
      'drift-after-failure',
      'egress-volume',
    ]);
  });

  /** The seed fixtures' steps, as guard-table.test.ts runs them. */
  const seedFiles = ['seed.yaml', 'seed-rows.yaml'];
  it.each(
    seedFiles.flatMap((f) => [
      [f, 'none'],
      [f, 'the example’s'],
    ]),
  )('%s is unchanged with %s', (file, which) => {
    const dir = tempDir();
    const text = readFileSync(join(import.meta.dirname, '../fixtures/guard', file), 'utf8');
    const fixture = parse(text.replaceAll('{tmp}', dir)) as {
      workspace: string;
      setup?: { dirs: string[] };
      steps: {
        session?: string;
        kind: string;
        target: string;
        approved?: boolean;
        expect: string;
      }[];
    };
    if (fixture.setup) layout(dir, fixture.setup.dirs);
    const sequences = which === 'none' ? [] : example.policy.sequences;
    const yaml = stringify({ version: 1, workspace: fixture.workspace, policy: { sequences } });
    const guard = new Guard(compilePolicy(parseConfig(yaml, file, dir)));
    expect(guard.policy.sequences).toHaveLength(sequences.length);
    fixture.steps.forEach((step, i) => {
      const session = step.session ?? 'replay';
      const event = normalizeEvent(
        { kind: step.kind, target: step.target },
        {
          session,
          source: 'replay',
          ts: 1000 + i,
          workspace: guard.policy.workspaceFor(session),
          approved: step.approved === true,
        },
      );
      const d = guard.inspect(event);
      guard.commit(session, event.ts, d, { seq: i + 1, kind: step.kind, target: step.target });
      expect(formatVerdict(d), `${file} step ${i + 1}`).toBe(step.expect);
    });
  });

  it('without rules a decision carries no trajectory fields and an ALLOW stores nothing', () => {
    const guard = guardFor([]);
    const event = normalizeEvent(
      { kind: 'read', target: KEY },
      { session: 's', source: 'proxy', ts: 1, workspace: WS },
    );
    const d = guard.inspect(event);
    expect(Object.keys(d).sort()).toEqual(
      ['approved', 'approvedBy', 'boundary', 'count', 'counted', 'reason', 'verdict'].sort(),
    );
    guard.commit('s', 1, d, { seq: 1, kind: 'read', target: KEY });
    guard.outcome('s', 1, { failed: true, bytesUp: 100, ts: 2 });
    expect([...guard.sessions()]).toEqual([]);
    expect(recordFields(eventRecord(event, d))).not.toMatch(/eventNo|marks|onFailure|"rule"/);
  });
});

describe('the store keeps trajectory state as absolute values', () => {
  const pending = (rid: number) => ({
    rid,
    seq: rid,
    eventNo: rid,
    ts: rid * 1000,
    kind: 'command',
    target: WS,
    rules: ['drift-after-failure'],
  });
  const mark = { rule: 'r', seq: 3, eventNo: 2, ts: 5, what: 'read /x' };
  /** A change that sets every trajectory field, for request `rid`. */
  const full = (rid: number, counted: Record<string, number> | null) => ({
    counted,
    pause: null,
    events: rid,
    marks: [mark],
    pending: pending(rid),
    sent: { rid, ts: rid, bytes: rid, since: 0 },
  });
  const plain = (store: MemoryStore<string>) => {
    const s = store.session('s');
    return (
      s && {
        events: s.events,
        marks: [...s.marks.values()],
        pending: s.pending.values().map((p) => p.rid),
        sent: [...s.sent.keys()],
        sentBytes: s.sentBytes,
      }
    );
  };

  it('a change installed twice changes nothing more', () => {
    const once = new MemoryStore<string>();
    const twice = new MemoryStore<string>();
    const change = full(7, null);
    once.commit('s', change);
    twice.commit('s', change);
    twice.commit('s', change);
    expect(plain(twice)).toEqual(plain(once));
    expect(plain(once)).toEqual({
      events: 7,
      marks: [mark],
      pending: [7],
      sent: [7],
      sentBytes: 7,
    });
  });

  it('keeps the newest 64 pending events and the bytes sent since the window', () => {
    const store = new MemoryStore<string>();
    for (let rid = 1; rid <= 70; rid++)
      store.commit('s', { counted: null, pause: null, pending: pending(rid) });
    expect(
      store
        .session('s')
        ?.pending.values()
        .map((p) => p.rid),
    ).toEqual(Array.from({ length: 64 }, (_, i) => i + 7));
    expect(store.session('s')?.pending.find(7)).toEqual(pending(7));
    expect(store.session('s')?.pending.find(6)).toBeUndefined();
    store.commit('s', { counted: null, pause: null, settled: 8 });
    expect(store.session('s')?.pending.find(8)).toBeUndefined();
    expect(store.session('s')?.pending.size).toBe(63);
    store.commit('s', { counted: null, pause: null, sent: { rid: 1, ts: 0, bytes: 5, since: 0 } });
    store.commit('s', { counted: null, pause: null, sent: { rid: 2, ts: 50, bytes: 7, since: 0 } });
    store.commit('s', {
      counted: null,
      pause: null,
      sent: { rid: 3, ts: 90, bytes: 9, since: 40 },
    });
    expect(plain(store)).toMatchObject({ sent: [2, 3], sentBytes: 16 });
  });

  it('a resume clears marks, pending events and bytes sent unless keepMarks; reset clears counts', () => {
    const store = new MemoryStore<string>();
    store.commit('s', full(1, { network: 1 }));
    store.resume('s', false, true);
    expect(plain(store)).toMatchObject({ marks: [mark], pending: [1], sentBytes: 1 });
    store.resume('s', false);
    expect(plain(store)).toEqual({ events: 1, marks: [], pending: [], sent: [], sentBytes: 0 });
    expect(store.session('s')?.counts.get('network')).toBe(1);
    store.resume('s', true);
    expect(store.session('s')?.counts.size).toBe(0);
  });
});
