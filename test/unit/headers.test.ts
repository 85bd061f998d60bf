import { createHash, timingSafeEqual } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { downstreamRawHeaders, upstreamRequestHeaders } from '../../src/action/headers.js';
import { clientAddress, Identity } from '../../src/ingress/identity.js';

// Identity's token comparison is watched: the real timingSafeEqual, counted.
vi.mock('node:crypto', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:crypto')>();
  return { ...actual, timingSafeEqual: vi.fn(actual.timingSafeEqual) };
});

describe('hop-by-hop headers (RFC 9110 § 7.6.1)', () => {
  it('drops hop-by-hop fields, fields named in Connection and credentials; replaces Host', () => {
    // prettier-ignore
    const raw = [
      'Host',
      'attacker.example',
      'Connection',
      'keep-alive, X-Secret',
      'Connection',
      'x-other',
      'X-Secret',
      's',
      'X-Other',
      'o',
      'Keep-Alive',
      'timeout=5',
      'Proxy-Authorization',
      'Basic Zm9vOmJhcg==',
      'Proxy-Connection',
      'keep-alive',
      'TE',
      'trailers',
      'Transfer-Encoding',
      'chunked',
      'Upgrade',
      'h2c',
      'Accept',
      'a',
      'Accept',
      'b',
      'Via',
      '1.0 earlier',
    ];
    expect(upstreamRequestHeaders(raw, 'target.example:8080')).toEqual([
      'host',
      'target.example:8080',
      'Accept',
      'a',
      'Accept',
      'b',
      'via',
      '1.0 earlier, 1.1 trajgate',
    ]);
  });

  it('keeps Connection and Upgrade for an upgrade, still without credentials', () => {
    const raw = ['Connection', 'Upgrade', 'Upgrade', 'websocket', 'Proxy-Authorization', 'x'];
    expect(upstreamRequestHeaders(raw, 'h', new Set(['connection', 'upgrade']))).toEqual([
      'host',
      'h',
      'Connection',
      'Upgrade',
      'Upgrade',
      'websocket',
      'via',
      '1.1 trajgate',
    ]);
  });

  it('cleans the response the same way', () => {
    // prettier-ignore
    const raw = [
      'Connection', 'close, x-internal',
      'X-Internal', '1',
      'Keep-Alive', 'timeout=1',
      'Transfer-Encoding', 'chunked',
      'Proxy-Authenticate', 'Basic',
      'Set-Cookie', 'a=1',
      'Set-Cookie', 'b=2',
      'Via', '1.1 upstream-cache',
      'Content-Type', 'text/plain',
    ].map((t) => Buffer.from(t));
    expect(downstreamRawHeaders(raw)).toEqual([
      'Set-Cookie',
      'a=1',
      'Set-Cookie',
      'b=2',
      'Content-Type',
      'text/plain',
      'via',
      '1.1 upstream-cache, 1.1 trajgate',
    ]);
  });

  it('passes obs-text bytes in a response field through unchanged (read as latin1)', () => {
    const value = Buffer.from([0x63, 0x61, 0x66, 0xc3, 0xa9, 0xff]); // "café" in UTF-8, then 0xFF
    const out = downstreamRawHeaders([Buffer.from('X-Name'), value]);
    expect(out.slice(0, 2)).toEqual(['X-Name', value.toString('latin1')]);
    expect(Buffer.from(out[1] as string, 'latin1')).toEqual(value);
  });

  it('drops the fields Connection names, matched without regard to case', () => {
    const raw = ['connection', 'X-Drop', 'x-drop', '1', 'X-Keep', '2'].map((t) => Buffer.from(t));
    expect(downstreamRawHeaders(raw)).toEqual(['X-Keep', '2', 'via', '1.1 trajgate']);
  });
});

describe('identity', () => {
  const token = 'agent-1-token-0123456789';
  const basic = (s: string) => `Basic ${Buffer.from(s).toString('base64')}`;
  const identity = new Identity([
    {
      id: 'agent-1',
      token,
      workspace: '/ws',
      allow: [],
      roles: [],
      tools: { allow: [], deny: [] },
    },
  ]);

  it.each([
    [basic(`agent-1:${token}`), { ok: true, session: 'agent-1' }],
    [
      `basic   ${Buffer.from(`agent-1:${token}`).toString('base64')}`,
      { ok: true, session: 'agent-1' },
    ],
    [basic(`agent-1:${token}x`), { ok: false, reason: 'wrong agent id or token' }],
    [basic(`agent-2:${token}`), { ok: false, reason: 'wrong agent id or token' }],
    [basic('agent-1'), { ok: false, reason: 'proxy credentials must be agent-id:token' }],
    [`Bearer ${token}`, { ok: false, reason: 'proxy credentials must use the Basic scheme' }],
    [undefined, { ok: false, reason: 'proxy credentials required (agent id and token)' }],
  ])('%s', (header, expected) => {
    expect(identity.fromProxyAuthorization(header, '10.1.2.3')).toEqual(expected);
  });

  it('compares SHA-256 digests in constant time, whatever the length or the id given', () => {
    const sha256 = (s: string) => createHash('sha256').update(s).digest();
    const compare = vi.mocked(timingSafeEqual);
    for (const [id, given] of [
      ['agent-1', token],
      ['agent-1', 'x'],
      ['agent-1', `${token}-and-much-longer`],
      ['agent-9', token],
    ] as const) {
      compare.mockClear();
      identity.fromProxyAuthorization(basic(`${id}:${given}`), '10.1.2.3');
      expect(compare).toHaveBeenCalledTimes(1);
      const [a, b] = compare.mock.calls[0] as [Buffer, Buffer];
      expect(a).toEqual(sha256(given));
      expect(b).toEqual(sha256(id === 'agent-1' ? token : ''));
    }
  });

  it('names the session by client address without agents', () => {
    expect(new Identity(null).fromProxyAuthorization(basic('x:y'), '127.0.0.1')).toEqual({
      ok: true,
      session: '127.0.0.1',
    });
    expect(clientAddress('::ffff:127.0.0.1')).toBe('127.0.0.1');
    expect(clientAddress('::1')).toBe('::1');
  });
});
