import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readAllRecords } from '../helpers/gateway.js';
import { runCliAsync } from '../helpers/cli.js';
import { checkedConfig, learnPatch, replayedRequests, withPatch } from '../helpers/learn.js';

/**
 * A recorded journal of two sessions named by client address, rotated once
 * (test/fixtures/learn/: journal.000001.jsonl, then journal.jsonl after its snapshot):
 * allowlisted package reads and an SSH tunnel, a POST reviewed, a private address refused, a
 * REVIEW an operator approved by pattern afterwards, a held POST approved once, a held CONNECT
 * answered by a deny.
 */
const JOURNAL = join(import.meta.dirname, '../fixtures/learn/journal.jsonl');

const EXPECTED = [
  'GET https://api.github.com/repos/o/r',
  'GET https://pypi.org/simple',
  'POST https://api.github.com/graphql',
  'ssh://github.com:22',
];

/** Each request of the fixture, and whether it went through. */
const ADMITTED = [
  ['GET https://pypi.org/simple/requests/', true],
  ['GET https://pypi.org/simple/urllib3/', true],
  ['POST https://pypi.org/legacy/', false],
  ['CONNECT github.com:22', true],
  ['GET http://10.0.0.1/metadata', false],
  ['GET https://api.github.com/repos/o/r/issues', true],
  ['GET https://api.github.com/repos/o/r/pulls', true],
  ['PUT https://api.github.com/repos/o/r/contents/x', false],
  ['POST https://api.github.com/graphql', true],
  ['CONNECT evil.example:443', false],
] as const;

describe('trajgate learn from a recorded, rotated journal', () => {
  it('reads the rotated file too, and its patch admits exactly what went through', async () => {
    const { text, patch } = await learnPatch(['--from', JOURNAL]);
    expect(text).toContain('# trajgate learn: 10 network request(s) in 2 file(s)');
    expect(patch).toEqual({ network: { allow: EXPECTED } });
    const config = await checkedConfig(withPatch({}, patch));
    const replayed = await replayedRequests(readAllRecords(JOURNAL), config);
    expect(replayed.map(([what, verdict]) => [what, verdict === 'ALLOW'])).toEqual(ADMITTED);
  });

  it('a config without the patch admits none of it (replay judges with the policy)', async () => {
    const replayed = await replayedRequests(readAllRecords(JOURNAL), await checkedConfig({}));
    expect(replayed.filter(([, verdict]) => verdict === 'ALLOW')).toEqual([]);
  });

  it('bad input: no journal, or none named, says what and where', async () => {
    const missing = await runCliAsync(['learn', '--from', '/nonexistent/journal.jsonl']);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toBe('trajgate: /nonexistent/journal.jsonl: no such journal\n');
    const none = await runCliAsync(['learn']);
    expect(none.status).toBe(2);
    expect(none.stderr).toContain('learn: name the journals: --from JOURNAL…');
  });
});
