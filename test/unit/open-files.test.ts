import { describe, expect, it } from 'vitest';
import { fdLines } from '../../src/cli/fd-limit.js';
import { connectionsFor, openFilesLimit } from '../../src/ingress/open-files.js';

/** /proc/self/limits as Linux writes it, with `soft` and `hard` open files. */
const limits = (soft: string, hard: string) =>
  [
    'Limit                     Soft Limit           Hard Limit           Units     ',
    'Max processes             63704                63704                processes ',
    `Max open files            ${soft.padEnd(21)}${hard.padEnd(21)}files     `,
    'Max locked memory         8388608              8388608              bytes     ',
  ].join('\n');

describe('the open-files limit', () => {
  it('is the soft limit of /proc/self/limits; unlimited or unreadable is no limit', () => {
    expect(openFilesLimit(limits('1024', '524288'))).toBe(1024);
    expect(openFilesLimit(limits('unlimited', 'unlimited'))).toBe(Infinity);
    expect(openFilesLimit('')).toBe(Infinity);
  });

  it('leaves room for 2 files a connection past 64 of its own, at least one', () => {
    expect(connectionsFor(1024)).toBe(480);
    expect(connectionsFor(8256)).toBe(4096);
    expect(connectionsFor(10)).toBe(1);
    expect(connectionsFor(Infinity)).toBe(Infinity);
  });

  it('start says what it allows, and warns only when maxConnections needs more', () => {
    const at = (maxConnections: number, limit: number) =>
      fdLines({ limits: { maxConnections } }, limit);
    expect(at(4096, 8256)).toEqual([
      'trajgate: open files limit 8256 (ulimit -n); allows 4096 client connection(s) at once (limits.maxConnections 4096, up to 2 files each)',
    ]);
    expect(at(4096, Infinity)[0]).toContain('open files limit unlimited (ulimit -n); allows 4096');
    expect(at(4096, 8255)).toEqual([
      'trajgate: open files limit 8255 (ulimit -n); allows 4095 client connection(s) at once (limits.maxConnections 4096, up to 2 files each)',
      '  warning: limits.maxConnections 4096 may need 8256 open files, more than the limit 8255: connections past 4095 are refused (503). Raise ulimit -n (docs/deploy.md) or lower limits.maxConnections to 4095.',
    ]);
  });
});
