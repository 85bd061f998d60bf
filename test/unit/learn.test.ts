import { describe, expect, it } from 'vitest';
import type { EventRecord, JournalRecord } from '../../src/journal/records.js';
import { propose } from '../../src/review/learn-patterns.js';
import { RequestLog } from '../../src/review/learn-requests.js';
import { eventRecord } from '../helpers/event-record.js';

/** A network event record: allowed by the allowlist unless `over` says otherwise. */
function net(seq: number, target: string, over: Partial<EventRecord> = {}): EventRecord {
  const method = target.includes('://') ? { method: 'GET' } : {};
  return eventRecord(seq, {
    source: 'proxy',
    kind: 'network',
    target,
    approved: true,
    approvedBy: 'network.allow[0]',
    ...method,
    ...over,
  });
}

const refused = (seq: number, target: string, over: Partial<EventRecord> = {}) =>
  net(seq, target, {
    approved: false,
    approvedBy: undefined,
    verdict: 'REVIEW',
    boundary: 'network',
    count: 1,
    ...over,
  });

const base = (seq: number) => ({ seq, ts: eventRecord(seq).ts });

function learned(records: JournalRecord[]) {
  const log = new RequestLog();
  for (const r of records) log.add(r, 0);
  const requests = log.requests();
  return { requests, ...propose(requests) };
}

const patterns = (records: JournalRecord[]) => learned(records).entries.map((e) => e.pattern);

const H = 'http://api.example.com';

describe('learn: paths merge to their longest common segment prefix while it excludes every refused request', () => {
  const table: [string, JournalRecord[], string[]][] = [
    [
      'two items merge under their folder',
      [net(1, `${H}/v1/items/1`), net(2, `${H}/v1/items/2`), refused(3, `${H}/v1/admin`)],
      ['GET http://api.example.com/v1/items'],
    ],
    [
      'a refused sibling under the common prefix splits them',
      [net(1, `${H}/v1/a/x`), net(2, `${H}/v1/b/y`), refused(3, `${H}/v1/c`)],
      ['GET http://api.example.com/v1/a/x', 'GET http://api.example.com/v1/b/y'],
    ],
    [
      'no common segment: never the bare host',
      [net(1, `${H}/v1/a`), net(2, `${H}/v2/b`)],
      ['GET http://api.example.com/v1/a', 'GET http://api.example.com/v2/b'],
    ],
    [
      'methods stay apart; a refused POST does not stop the GET entry',
      [
        net(1, `${H}/v1/x`),
        net(2, `${H}/v1/x`, { method: 'POST' }),
        refused(3, `${H}/v1/x/y`, { method: 'DELETE' }),
      ],
      ['GET http://api.example.com/v1/x', 'POST http://api.example.com/v1/x'],
    ],
    [
      'a port other than the scheme’s own is named; https keeps its scheme',
      [net(1, 'http://127.0.0.1:8081/a'), net(2, 'https://api.example.com/b')],
      ['GET http://127.0.0.1:8081/a', 'GET https://api.example.com/b'],
    ],
    [
      'a blind tunnel is its host:port; an IPv6 host in brackets',
      [net(1, 'git.example.com:22'), net(2, '[::1]:5432')],
      ['[::1]:5432', 'git.example.com:22'],
    ],
    [
      'a blind tunnel whose every outcome was SSH narrows to ssh://',
      [
        net(1, 'git.example.com:22'),
        {
          ...base(2),
          type: 'outcome',
          rid: 1,
          session: 's',
          status: null,
          bytesUp: 9,
          bytesDown: 9,
          durationMs: 1,
          protocol: 'ssh',
        },
      ],
      ['ssh://git.example.com:22'],
    ],
    [
      'a cut target (past 512 bytes) keeps its whole segments only',
      [net(1, `${H}/files/abc/def`, { targetBytes: 900, targetSha256: 'f'.repeat(64) })],
      ['GET http://api.example.com/files/abc/'],
    ],
  ];
  it.each(table)('%s', (_, records, expected) => {
    expect(patterns(records)).toEqual(expected);
  });
});

describe('learn: what counts as admitted', () => {
  const table: [string, JournalRecord[], string[]][] = [
    [
      'a REVIEW an operator approved afterwards (its session)',
      [
        refused(1, `${H}/v1/x`),
        {
          ...base(2),
          type: 'approve',
          session: 's',
          pattern: 'GET http://api.example.com/v1/',
          kind: 'network',
          expiresAt: null,
          by: 'op',
        },
      ],
      ['GET http://api.example.com/v1/x'],
    ],
    [
      "another session's approval does not count",
      [
        refused(1, `${H}/v1/x`),
        {
          ...base(2),
          type: 'approve',
          session: 'other',
          pattern: 'api.example.com',
          kind: 'network',
          expiresAt: null,
          by: 'op',
        },
      ],
      [],
    ],
    [
      'an approval revoked',
      [
        refused(1, `${H}/v1/x`),
        {
          ...base(2),
          type: 'approve',
          session: null,
          pattern: 'api.example.com',
          kind: 'network',
          expiresAt: null,
          by: 'op',
        },
        {
          ...base(3),
          type: 'revoke',
          id: 'a2',
          pattern: 'api.example.com',
          kind: 'network',
          session: null,
          by: 'op',
        },
      ],
      [],
    ],
    [
      'an approval before the refusal did not admit it (something else refused it)',
      [
        {
          ...base(1),
          type: 'approve',
          session: null,
          pattern: 'api.example.com',
          kind: 'network',
          expiresAt: null,
          by: 'op',
        },
        refused(2, `${H}/v1/x`, { verdict: 'PAUSE', denied: 'private address' }),
      ],
      [],
    ],
    [
      'approve-once of a held request, judged again with its rid',
      [
        refused(1, `${H}/a`, { verdict: 'PAUSE' }),
        net(2, `${H}/b`, { held: true, approved: false, verdict: 'PAUSE' }),
        net(3, `${H}/c`, { held: true, approved: false, verdict: 'PAUSE' }),
        { ...base(4), type: 'resume', session: 's', reset: false, once: [2], by: 'op' },
      ],
      ['GET http://api.example.com/b'],
    ],
    [
      'a request a deny pattern refused mid-flow, though allowed first',
      [
        net(1, `${H}/up`),
        refused(2, `${H}/up`, {
          rid: 1,
          verdict: 'PAUSE',
          denied: 'blocked by an operator (d9): POST',
        }),
      ],
      [],
    ],
    [
      'held, then answered by a deny',
      [
        net(1, 'db.example.com:5432', { held: true, approved: false, verdict: 'PAUSE' }),
        { ...base(2), type: 'deny', session: 's', by: 'op', released: 1 },
      ],
      [],
    ],
    [
      'held, then allowed after a resume',
      [
        net(1, 'db.example.com:5432', { held: true, approved: false, verdict: 'PAUSE' }),
        net(2, 'db.example.com:5432', { rid: 1 }),
      ],
      ['db.example.com:5432'],
    ],
  ];
  it.each(table)('%s', (_, records, expected) => {
    expect(patterns(records)).toEqual(expected);
  });
});

describe('learn: conflicts and the record of each entry', () => {
  it('an admitted path with a refused one under it is reported, not proposed', () => {
    const { entries, conflicts } = learned([net(1, `${H}/x`), refused(2, `${H}/x/y`)]);
    expect(entries).toEqual([]);
    expect(conflicts).toEqual([
      {
        target: 'GET http://api.example.com/x',
        count: 1,
        refused: { target: `${H}/x/y`, seq: 2, why: 'REVIEW: network' },
      },
    ]);
  });

  it('a blind tunnel allowed where a visible request to the same host:port was refused', () => {
    const { entries, conflicts } = learned([
      net(1, 'api.example.com:80'),
      refused(2, `${H}/admin`),
    ]);
    expect(entries).toEqual([]);
    expect(conflicts.map((c) => c.target)).toEqual(['api.example.com:80']);
  });

  it('counts, first and last time and sessions per entry', () => {
    const { entries } = learned([
      net(3, `${H}/v1/a`, { session: 'b' }),
      net(1, `${H}/v1/b`, { session: 'a' }),
      net(7, `${H}/v1/b`, { session: 'a' }),
    ]);
    expect(entries).toEqual([
      {
        pattern: 'GET http://api.example.com/v1',
        kind: 'request',
        count: 3,
        first: eventRecord(1).ts,
        last: eventRecord(7).ts,
        sessions: ['a', 'b'],
      },
    ]);
  });
});
