import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { normalizeEvent } from '../../src/event/normalize.js';
import { compileApproval } from '../../src/guard/approvals.js';
import { globToRegExp } from '../../src/guard/glob.js';
import { suggestApproval } from '../../src/guard/suggest.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * Approvals of path kinds end where their text ends: `/x` approves `/x`, never `/xyz` or
 * `/x/y`; `/x/**` approves the directory and what is under it. The gateway proposes (to the
 * review page and `approve --from`) a target as a glob that matches that target alone,
 * whatever characters the agent chose.
 */
const root = tempDir();
const ws = join(root, 'ws');
const event = (kind: string, target: string) =>
  normalizeEvent({ kind, target }, { session: 's', source: 'bridge', ts: 1, workspace: ws });
const approves = (pattern: string, kind: string, target: string) =>
  compileApproval({ pattern, kind }).test(event(kind, target));

// [pattern, target, approved]
const cases: [string, string, boolean][] = [
  ['/x', '/x', true],
  ['/x', '/xyz', false],
  ['/x', '/x/y', false],
  ['/x', '/x/', true],
  ['/x', '/x/.', true],
  ['/x', '/x/y/..', true],
  ['/x', '/xyz/..', false],
  ['/x/**', '/x', true],
  ['/x/**', '/x/y/z', true],
  ['/x/**', '/xyz', false],
  ['/x/**', '/xyz/a', false],
  ['/x/**', '/x/../etc/passwd', false],
  ['/x/*', '/x/y', true],
  ['/x/*', '/x/y/z', false],
  ['/x/\\*', '/x/*', true],
  ['/x/\\*', '/x/y', false],
  ['/x/a\\?', '/x/a?', true],
  ['/x/a\\?', '/x/ab', false],
];

describe('path approvals end on a segment', () => {
  // Under a fresh directory: nothing there is a link, so only the text decides.
  const at = (p: string) => `${root}${p}`;
  it.each(cases)('write %s approves %s: %s', (pattern, target, ok) => {
    expect(approves(at(pattern), 'write', at(target))).toBe(ok);
  });

  it('a literal backslash not before *, ? or \\ stays a backslash', () => {
    expect(globToRegExp('/x\\y').test('/x\\y')).toBe(true);
    expect(globToRegExp('/x\\\\y').test('/x\\y')).toBe(true);
  });
});

describe('the suggested approval is the target alone', () => {
  // [kind, target, proposed]
  const proposed: [string, string, string][] = [
    ['write', '/x', '/x'],
    ['write', '/tmp/*', '/tmp/\\*'],
    ['read', '/srv/a?b', '/srv/a\\?b'],
    ['read', '/srv/**', '/srv/\\*\\*'],
    ['read', '/srv/a\\*', '/srv/a\\\\\\*'],
    ['tool', '*', '\\*'],
    ['network', 'https://api.example.com/v1/x', 'https://api.example.com/v1/'],
    ['network', 'http://api.example.com:8080/x', 'http://api.example.com:8080'],
  ];
  it.each(proposed)('%s %s → %s', (kind, target, pattern) => {
    expect(suggestApproval({ kind, target }).pattern).toBe(pattern);
  });

  it.each(proposed.filter(([kind]) => kind !== 'network'))(
    'approving %s %s as proposed covers it and no sibling',
    (kind, target) => {
      const { pattern } = suggestApproval({ kind, target });
      expect(approves(pattern, kind, target)).toBe(true);
      expect(approves(pattern, kind, `${target}yz`)).toBe(false);
      const sibling = target.replace(/[*?\\]/g, 'q');
      if (sibling !== target) expect(approves(pattern, kind, sibling)).toBe(false);
    },
  );
});

describe('a tree read is approved only with everything under it', () => {
  const treeRead = (target: string) =>
    normalizeEvent(
      { kind: 'read', target, tree: true },
      { session: 's', source: 'bridge', ts: 1, workspace: ws },
    );
  const at = (p: string) => `${root}${p}`;
  // [pattern, tree root, approved]
  const cases: [string, string, boolean][] = [
    ['/x', '/x', false],
    ['/x/*', '/x', false],
    ['/x/**', '/x', true],
    ['/x/**', '/x/y', true],
    ['/x/y/**', '/x', false],
    ['/x/**', '/xyz', false],
  ];
  it.each(cases)('read %s approves a tree read of %s: %s', (pattern, target, ok) => {
    expect(compileApproval({ pattern: at(pattern), kind: 'read' }).test(treeRead(at(target)))).toBe(
      ok,
    );
  });

  it('the approval proposed for it is its folder and what is under it', () => {
    const { pattern } = suggestApproval({ kind: 'read', target: at('/x/a*'), tree: true });
    expect(pattern).toBe(at('/x/a\\*/**'));
    expect(compileApproval({ pattern, kind: 'read' }).test(treeRead(at('/x/a*')))).toBe(true);
    expect(suggestApproval({ kind: 'read', target: '/', tree: true }).pattern).toBe('/**');
  });
});
