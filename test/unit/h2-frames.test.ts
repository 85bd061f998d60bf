import { describe, expect, it } from 'vitest';
import { AgentFrames, MAX_SETTINGS_FRAMES, SentFrames } from '../../src/ingress/h2-frames.js';
import type { SentWatch } from '../../src/ingress/h2-frames.js';
import { ERROR, FLAG, FRAME, frame, OPENING, rstStream, settings } from '../helpers/h2-frames.js';

/** A GOAWAY frame (RFC 9113 § 6.8): last stream, code, debug data. */
function goAway(last: number, code: number, debug: string): Buffer {
  const payload = Buffer.alloc(8);
  payload.writeUInt32BE(last);
  payload.writeUInt32BE(code, 4);
  return frame(FRAME.GOAWAY, 0, 0, Buffer.concat([payload, Buffer.from(debug)]));
}

/** Writes `bytes` to a SentFrames in pieces cut at `cuts`; what goes out, and what it saw. */
function send(bytes: Buffer, cuts: number[], replace: string | null) {
  const seen: unknown[] = [];
  const watch: SentWatch = {
    goAwaySent: (code, debug) => (seen.push(['goaway', code, debug]), replace),
    resetSent: (stream, code) => void seen.push(['reset', stream, code]),
  };
  const sent = new SentFrames();
  sent.watch = watch;
  const out: Buffer[] = [];
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    out.push(...sent.scan(bytes.subarray(from, cut)));
    from = cut;
  }
  return { out: Buffer.concat(out), seen };
}

const DATA = frame(FRAME.DATA, 0, 1, Buffer.from('x'.repeat(40)));
const STREAM = Buffer.concat([settings(), DATA, rstStream(3, ERROR.PROTOCOL_ERROR), DATA]);
const ENDED = Buffer.concat([DATA, goAway(5, ERROR.FRAME_SIZE_ERROR, 'too large'), DATA]);

describe('SentFrames: what nghttp2 sends, watched as it goes by', () => {
  it('passes every byte as it came, however the writes cut it, and tells each RST_STREAM once', () => {
    for (let cut = 0; cut <= STREAM.length; cut++) {
      for (const cuts of [[cut], Array.from({ length: cut }, (_, i) => i + 1)]) {
        const { out, seen } = send(STREAM, cuts, null);
        expect(out.equals(STREAM), `cut at ${cuts.join(',')}`).toBe(true);
        expect(seen).toEqual([['reset', 3, ERROR.PROTOCOL_ERROR]]);
      }
    }
  });

  it('a GOAWAY kept as it is when the watch says so', () => {
    for (let cut = 0; cut <= ENDED.length; cut++) {
      const { out, seen } = send(ENDED, [cut], null);
      expect(out.equals(ENDED)).toBe(true);
      expect(seen).toEqual([['goaway', ERROR.FRAME_SIZE_ERROR, 'too large']]);
    }
  });

  it('a GOAWAY carries the watch’s debug data instead, its length rewritten, wherever the writes cut it', () => {
    const want = Buffer.concat([DATA, goAway(5, ERROR.FRAME_SIZE_ERROR, 'trajgate: why'), DATA]);
    for (let cut = 0; cut <= ENDED.length; cut++) {
      const { out } = send(ENDED, [cut, Math.min(cut + 7, ENDED.length)], 'trajgate: why');
      expect(out.equals(want), `cut at ${cut}`).toBe(true);
    }
  });
});

describe('AgentFrames: what the agent sends, checked before nghttp2 reads it', () => {
  it('accepts the preface and frames, cut anywhere', () => {
    const bytes = Buffer.concat([OPENING, DATA, settings([[4, 1]])]);
    for (let cut = 0; cut <= bytes.length; cut++) {
      const agent = new AgentFrames();
      expect([agent.read(bytes.subarray(0, cut)), agent.read(bytes.subarray(cut))]).toEqual([
        null,
        null,
      ]);
    }
  });

  it('names a wrong preface with what came instead, once', () => {
    const agent = new AgentFrames();
    expect(agent.read(Buffer.from('PRI * HTTP/2.0\r\n'))).toBeNull();
    expect(agent.read(Buffer.from('\r\nGET / HTTP/1.1'))).toEqual({
      preface: JSON.stringify('PRI * HTTP/2.0\r\n\r\nGET / HTTP/1.1'),
    });
    expect(agent.wrong).toBe(true);
    expect(agent.read(OPENING)).toBeNull();
  });

  it(`counts SETTINGS frames (ACKs aside): the ${MAX_SETTINGS_FRAMES + 1}th is a flood`, () => {
    const agent = new AgentFrames();
    const ack = frame(FRAME.SETTINGS, FLAG.ACK, 0);
    expect(agent.read(OPENING)).toBeNull();
    for (let i = 1; i < MAX_SETTINGS_FRAMES; i++)
      expect(agent.read(Buffer.concat([settings(), ack]))).toBeNull();
    expect(agent.read(settings())).toEqual({
      flood: expect.stringMatching(/^HTTP\/2 SETTINGS flood: more than 100 SETTINGS frames/),
    });
  });
});
