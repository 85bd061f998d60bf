import { describe, expect, it } from 'vitest';
import type { Decision } from '../../src/guard/guard.js';
import type { Event } from '../../src/event/event.js';
import { recordFields } from '../../src/journal/json.js';
import type { JournalRecord, OutcomeRecord, Unstamped } from '../../src/journal/records.js';
import { eventRecord } from '../../src/journal/records.js';

/** The hand-written lines must be exactly what JSON.stringify writes, field order included. */
const same = (record: Unstamped<JournalRecord>) =>
  expect(`{${recordFields(record)}`).toBe(JSON.stringify(record));

const ODD = [
  '',
  'plain',
  'quote " and \\ backslash',
  'tab\tnl\ncr\r\u0000\u001f',
  'é 🙂 日本',
  '\ud800 lone',
  'end\udfff',
];

const event = (over: Partial<Event> = {}): Event => ({
  kind: 'network',
  target: 'http://example.com/x',
  approved: false,
  session: 'agent-1',
  source: 'proxy',
  ts: 0,
  method: undefined,
  subject: { type: 'opaque', value: 'x' },
  ...over,
});
const decision = (over: Partial<Decision> = {}): Decision => ({
  verdict: 'ALLOW',
  boundary: null,
  count: 0,
  reason: 'no boundary crossed',
  approved: false,
  approvedBy: null,
  counted: null,
  ...over,
});

/** In the pipeline's field order. */
const outcome = (over: Partial<OutcomeRecord> = {}): Unstamped<OutcomeRecord> => {
  const o = {
    rid: 7,
    session: 's',
    status: 200,
    bytesUp: 0,
    bytesDown: 64,
    durationMs: 3,
    ...over,
  };
  return {
    type: 'outcome',
    rid: o.rid,
    session: o.session,
    status: o.status,
    bytesUp: o.bytesUp,
    bytesDown: o.bytesDown,
    error: o.error,
    failed: o.failed,
    sni: o.sni,
    protocol: o.protocol,
    via: o.via,
    grpcStatus: o.grpcStatus,
    durationMs: o.durationMs,
  };
};

describe('journal lines written field by field', () => {
  it('event records, with every optional field absent and present', () => {
    same(eventRecord(event(), decision()));
    same(
      eventRecord(
        event({ method: 'POST', denied: 'private address (loopback 127.0.0.1)' }),
        decision({
          verdict: 'PAUSE',
          boundary: 'network',
          count: 2,
          reason: 'second unapproved network operation',
          approvedBy: '*.example.com',
          counted: { network: 2, 'odd "key"\n': 1 },
        }),
        { rid: 41, held: true },
      ),
    );
    same(
      eventRecord(
        event({
          kind: 'read',
          target: '/w',
          subject: { type: 'path', path: '/w', alias: null, tree: true },
          call: 'toolu_01 "x"',
        }),
        decision(),
      ),
    );
    same(
      eventRecord(
        event({
          credentials: ['aws'],
          exfiltration: { credential: 'github', where: 'tunnel bytes (base64)' },
        }),
        decision({ verdict: 'PAUSE', boundary: 'credential-exfiltration', count: 1 }),
      ),
    );
  });

  it('path events carry the path as resolved, and its lexical reading where it differs', () => {
    const path = (p: string | null, alias: string | null) =>
      event({ kind: 'read', target: 'a/../b', subject: { type: 'path', path: p, alias } });
    for (const e of [path('/ws/b', null), path('/real/b', '/ws/b'), path(null, null)]) {
      const r = eventRecord(e, decision());
      same(r);
      expect(r.resolved).toBe(e.subject.type === 'path' ? e.subject.path : undefined);
    }
    expect(eventRecord(path('/real/b', '/ws/b'), decision()).alias).toBe('/ws/b');
    expect(
      Object.hasOwn(JSON.parse(`{${recordFields(eventRecord(event(), decision()))}`), 'resolved'),
    ).toBe(false);
  });

  it('outcome records, with and without an error and a status', () => {
    same(outcome({ status: 200 }));
    same(outcome({ status: null, error: 'client closed while held' }));
    same(outcome({ status: 502, error: undefined }));
    same(outcome({ status: 502, failed: true, sni: null, via: 'socks' }));
    same(outcome({ sni: 'a.test', via: 'socks' }));
    same(outcome({ sni: null, protocol: 'ssh' }));
    same(outcome({ status: 200, failed: true, grpcStatus: 5 }));
    same(outcome({ status: 200, grpcStatus: 0 }));
  });

  it('numbers JSON cannot carry become null, as JSON.stringify writes them', () => {
    same(outcome({ bytesUp: NaN, bytesDown: Infinity, durationMs: -0 }));
  });

  it('any string in any field: quotes, escapes, control characters, lone surrogates', () => {
    for (const s of ODD) {
      same(
        eventRecord(
          event({ session: s, target: s, kind: s, method: s, denied: s, call: s }),
          decision({ reason: s, boundary: s, approvedBy: s, counted: { [s]: 1 } }),
        ),
      );
      same({
        type: 'outcome',
        rid: 1,
        session: s,
        status: 200,
        bytesUp: 1,
        bytesDown: 2,
        error: s,
        durationMs: 0,
      });
    }
  });

  it('other records go through JSON.stringify unchanged', () => {
    same({ type: 'resume', session: 'a "b"', reset: true, by: 'op' });
    same({ type: 'refusal', source: 'proxy', client: '127.0.0.1', status: 400, reason: 'bad\n' });
  });
});
