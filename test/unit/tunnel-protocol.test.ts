import { describe, expect, it } from 'vitest';
import type { Sniffed } from '../../src/ingress/tunnel-protocol.js';
import { protocolProblem, SNIFF_MAX, sniffProtocol } from '../../src/ingress/tunnel-protocol.js';

const hex = (h: string) => Buffer.from(h.replaceAll(' ', ''), 'hex');
const text = (t: string) => Buffer.from(t, 'latin1');

// [first client bytes, no more will come, what they are]
const cases: [string, Buffer, boolean, Sniffed][] = [
  ['an SSH-2.0 banner', text('SSH-2.0-OpenSSH_9.2p1\r\n'), false, 'ssh'],
  ['an SSH-1.99 banner (RFC 4253 § 5.1)', text('SSH-1.99-x\r\n'), false, 'ssh'],
  ['an SSH banner cut short', text('SSH-2'), false, 'more'],
  ['an SSH banner cut short, then the end', text('SSH-2'), true, 'unknown'],
  ['SSH-1.5 (not offered by any client since 2001)', text('SSH-1.5-x\r\n'), false, 'unknown'],
  ['a TLS ClientHello record', hex('16 03 01 02 00 01'), false, 'tls'],
  ['a lone handshake type byte', hex('16'), false, 'more'],
  ['PostgreSQL SSLRequest', hex('00000008 04d2162f'), false, 'postgres'],
  ['PostgreSQL GSSENCRequest', hex('00000008 04d21630'), false, 'postgres'],
  ['PostgreSQL StartupMessage 3.0', hex('00000029 00030000 75736572'), false, 'postgres'],
  ['a StartupMessage too long to be one', hex('00100000 00030000'), false, 'unknown'],
  ['an SSLRequest of the wrong length', hex('00000010 04d2162f'), false, 'unknown'],
  ['a length prefix cut short', hex('000000'), false, 'more'],
  ['HTTP', text('GET / HTTP/1.1\r\n'), false, 'unknown'],
  ['one byte of nothing known', text('x'), false, 'unknown'],
  ['nothing yet', Buffer.alloc(0), false, 'more'],
];

describe('tunnels named by their first client bytes', () => {
  it.each(cases)('%s', (_what, first, final, expected) => {
    expect(sniffProtocol(first, final)).toBe(expected);
  });

  it('decides within SNIFF_MAX bytes whatever they are', () => {
    for (const first of [text('SSH-1.99-'), hex('000000000000000000'), text('SSH-2.0-x')])
      expect(sniffProtocol(first.subarray(0, SNIFF_MAX), true)).not.toBe('more');
  });

  it('a requirement names its patterns and what came instead', () => {
    const required = { protocols: new Set(['ssh'] as const), patterns: ['ssh://g.example:22'] };
    expect(protocolProblem(null, 'unknown')).toBeNull();
    expect(protocolProblem(required, 'ssh')).toBeNull();
    expect(protocolProblem(required, 'tls')).toBe(
      'the patterns that allow this tunnel (ssh://g.example:22) require SSH, and its first bytes are TLS',
    );
  });
});
