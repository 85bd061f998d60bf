import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { HANDSHAKE_HINT, HandshakeLog } from '../../src/review/handshakes.js';
import type { TrailState } from '../../src/review/review.js';
import { Review } from '../../src/review/review.js';
import { tempDir } from '../helpers/tmp.js';

/** A logger whose lines are kept, parsed. */
function captured(): { log: pino.Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      done();
    },
  });
  return { log: pino({ level: 'info', base: null }, sink), lines };
}

const refused = (session: string, target: string, handshake = 'unknown_ca') => ({
  session,
  target,
  handshake,
  reason: 'TLS handshake with the agent failed: tlsv1 alert unknown ca',
});

describe('HandshakeLog', () => {
  it('one line per session and host at once; the rest counted into one line at shutdown', () => {
    const { log, lines } = captured();
    const handshakes = new HandshakeLog(log);
    for (let i = 0; i < 7; i++) handshakes.refused(refused('agent-1', 'registry.npmjs.org:443'));
    handshakes.refused(refused('agent-1', 'pypi.org:443', 'closed'));
    handshakes.refused(refused('agent-2', 'registry.npmjs.org:443'));
    expect(lines.map((l) => l.msg)).toEqual([
      `TLS handshake refused by session agent-1 to registry.npmjs.org:443 (unknown_ca): TLS handshake with the agent failed: tlsv1 alert unknown ca; ${HANDSHAKE_HINT}`,
      `TLS handshake refused by session agent-1 to pypi.org:443 (closed): TLS handshake with the agent failed: tlsv1 alert unknown ca; ${HANDSHAKE_HINT}`,
      `TLS handshake refused by session agent-2 to registry.npmjs.org:443 (unknown_ca): TLS handshake with the agent failed: tlsv1 alert unknown ca; ${HANDSHAKE_HINT}`,
    ]);
    handshakes.close();
    expect(lines.slice(3)).toEqual([
      expect.objectContaining({
        level: 40,
        session: 'agent-1',
        target: 'registry.npmjs.org:443',
        suppressed: 6,
        msg: `6 more TLS handshake(s) refused by session agent-1 to registry.npmjs.org:443 within 60 s; the last: TLS handshake with the agent failed: tlsv1 alert unknown ca; ${HANDSHAKE_HINT}`,
      }),
    ]);
  });
});

describe('Review keeps the handshakes a session refused', () => {
  const config = parseConfig('version: 1\n', 'test', tempDir());
  const record = (seq: number, extra: Record<string, unknown> = {}) => ({
    type: 'refusal',
    seq,
    ts: new Date(1_700_000_000_000 + seq).toISOString(),
    source: 'proxy',
    client: '127.0.0.1',
    session: 'agent-1',
    status: 400,
    target: 'registry.npmjs.org:443',
    reason: 'TLS handshake with the agent failed: tlsv1 alert unknown ca',
    handshake: 'unknown_ca',
    ...extra,
  });

  it('counts them all, keeps the newest 20, and a snapshot keeps them', () => {
    const review = new Review(config, pino({ level: 'silent' }));
    for (let seq = 1; seq <= 25; seq++) review.noteHandshake(record(seq), seq);
    review.noteHandshake(record(26, { handshake: undefined }), 26); // another refusal
    const event = { type: 'event', session: 'agent-1' };
    review.noteHandshake(event, 27);
    const { refused, recent } = review.handshakes('agent-1');
    expect(refused).toBe(25);
    expect(recent.map((h) => h.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 6));
    expect(recent[0]).toEqual({
      seq: 6,
      ts: record(6).ts,
      target: 'registry.npmjs.org:443',
      handshake: 'unknown_ca',
      reason: 'TLS handshake with the agent failed: tlsv1 alert unknown ca',
      hint: HANDSHAKE_HINT,
    });
    // The session is known (listed, and its detail served) with no event at all.
    expect([...review.sessions()]).toEqual(['agent-1']);
    const again = new Review(config, pino({ level: 'silent' }));
    again.restoreTrails(JSON.parse(JSON.stringify(review.trails())));
    expect(again.handshakes('agent-1')).toEqual(review.handshakes('agent-1'));
  });

  it('a snapshot from before them restores none', () => {
    const review = new Review(config, pino({ level: 'silent' }));
    review.noteHandshake(record(1), 1);
    const [session, trail] = review.trails()[0] as [string, TrailState];
    const { refusedHandshakes: _n, handshakes: _h, ...before } = trail;
    const restored = new Review(config, pino({ level: 'silent' }));
    restored.restoreTrails([[session, before]]);
    expect(restored.handshakes('agent-1')).toEqual({ refused: 0, recent: [] });
  });
});
