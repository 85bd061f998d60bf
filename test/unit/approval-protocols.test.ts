import { describe, expect, it } from 'vitest';
import { normalizeEvent } from '../../src/event/normalize.js';
import type { ApprovalSpec } from '../../src/guard/approvals.js';
import { ApprovalSet, compileApproval } from '../../src/guard/approvals.js';

/**
 * A tunnel must carry a protocol only when every approval covering it names one (`ssh://…`):
 * one pattern without a protocol scheme, or none at all, requires nothing.
 */
const tunnel = (target: string) =>
  normalizeEvent(
    { kind: 'network', target },
    { session: 's', source: 'proxy', ts: 1_000, workspace: '/ws' },
  );

function required(specs: ApprovalSpec[], target: string) {
  const set = new ApprovalSet();
  for (const spec of specs) set.add(compileApproval(spec));
  const got = set.protocolsFor(tunnel(target));
  return got === null ? null : { protocols: [...got.protocols], patterns: got.patterns };
}

describe('protocols a tunnel must carry', () => {
  it('only ssh:// covers it: SSH, naming the pattern', () => {
    expect(required([{ pattern: 'ssh://git.example.com' }], 'git.example.com:22')).toEqual({
      protocols: ['ssh'],
      patterns: ['ssh://git.example.com'],
    });
  });

  it('every covering pattern names one: any of them, global and session ones alike', () => {
    const specs = [
      { pattern: 'ssh://h.example:443' },
      { pattern: 'tls://h.example:443', session: 's' },
      { pattern: 'postgres://other.example:443' },
    ];
    expect(required(specs, 'h.example:443')).toEqual({
      protocols: ['ssh', 'tls'],
      patterns: ['ssh://h.example:443', 'tls://h.example:443'],
    });
  });

  it.each([
    [[{ pattern: 'ssh://h.example:2222' }, { pattern: 'h.example:2222' }], 'h.example:2222'],
    [
      [{ pattern: 'ssh://h.example:2222' }, { pattern: 'h.example:2222', session: 's' }],
      'h.example:2222',
    ],
    [[{ pattern: 'ssh://h.example' }], 'h.example:2222'],
    [[{ pattern: 'ssh://h.example', session: 'other' }], 'h.example:22'],
    [[{ pattern: 'ssh://h.example', expiresAt: 1_000 }], 'h.example:22'],
    [[{ pattern: 'https://h.example' }], 'h.example:443'],
  ])('%j for %s: nothing required', (specs, target) => {
    expect(required(specs, target)).toBeNull();
  });
});
