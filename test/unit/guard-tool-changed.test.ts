import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import type { EventInput } from '../../src/event/event.js';
import { normalizeEvent } from '../../src/event/normalize.js';
import { OWN_BOUNDARIES } from '../../src/event/own-boundaries.js';
import { validateEventInput, validateRecordedEvent } from '../../src/event/validate.js';
import { compilePolicy } from '../../src/guard/compile.js';
import { Guard } from '../../src/guard/guard.js';
import { runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';

/** A session shown a changed tool list pauses at its next event, whatever allows it. */
const KINDS = new Set(['read', 'write', 'command', 'network', 'internal', 'tool']);
const guardFor = (yaml: string) => new Guard(compilePolicy(parseConfig(yaml, 'x.yaml', tempDir())));
const MARK = { server: 'bridge', digest: 'ab'.repeat(32), what: 'read_notes description changed' };

const judge = (guard: Guard, input: EventInput, approved = false) =>
  guard.inspect(
    normalizeEvent(input, { session: 'a', source: 'ingest', ts: 1000, workspace: '/ws', approved }),
  );

describe('tool-changed in the guard', () => {
  const guard = guardFor(
    'version: 1\nworkspace: /ws\nnetwork:\n  allow: ["api.example.com"]\npolicy:\n  countBy: target\n',
  );

  it.each<[string, EventInput, boolean]>([
    ['a read inside the workspace', { kind: 'read', target: '/ws/a', toolChange: MARK }, false],
    [
      'an allowed host',
      { kind: 'network', target: 'https://api.example.com/', toolChange: MARK },
      false,
    ],
    ['approved once by an operator', { kind: 'write', target: '/ws/a', toolChange: MARK }, true],
    ['an unmapped tool', { kind: 'tool', target: 'send_mail', toolChange: MARK }, false],
  ])('%s: PAUSE at once', (_name, input, approved) => {
    const d = judge(guard, input, approved);
    expect(d).toMatchObject({ verdict: 'PAUSE', boundary: 'tool-changed', count: 1 });
    expect(d.reason).toBe(
      'tools/list of bridge changed: read_notes description changed: tool-changed',
    );
  });

  it('without the mark the same events are allowed (control)', () => {
    expect(judge(guard, { kind: 'read', target: '/ws/a' }).verdict).toBe('ALLOW');
    expect(judge(guard, { kind: 'network', target: 'https://api.example.com/' }).verdict).toBe(
      'ALLOW',
    );
  });

  it('a replayed record knows the list only by its digest', () => {
    const { what: _what, ...recorded } = MARK;
    expect(judge(guard, { kind: 'read', target: '/ws/a', toolChange: recorded }).reason).toBe(
      `tools/list of bridge changed (list ${'ab'.repeat(6)}): tool-changed`,
    );
  });

  it('is trajgate’s own boundary: no config may name it', () => {
    expect(OWN_BOUNDARIES.has('tool-changed')).toBe(true);
    let details: readonly string[] = [];
    try {
      parseConfig(
        'version: 1\nworkspace: /ws\npolicy:\n  boundaries:\n    tool-changed: { kinds: [read], pauseAt: 9 }\n',
        'x.yaml',
        tempDir(),
      );
    } catch (err) {
      details = (err as { details: readonly string[] }).details;
    }
    expect(details.join('\n')).toMatch(/tool-changed/);
  });

  it('no sender may claim it; a journal record carries it back to replay', () => {
    expect(() =>
      validateEventInput({ kind: 'read', target: '/ws/a', toolChange: MARK }, KINDS),
    ).toThrow(/"toolChange" is set by trajgate/);
    const { input } = validateRecordedEvent(
      { kind: 'read', target: '/ws/a', toolChange: { server: 'bridge', digest: 'x1' } },
      KINDS,
    );
    expect(input.toolChange).toEqual({ server: 'bridge', digest: 'x1' });
    expect(() =>
      validateRecordedEvent({ kind: 'read', target: '/ws/a', toolChange: 'x' }, KINDS),
    ).toThrow(/"toolChange" must be/);
  });

  it('trajgate replay: the seed example still reads as the article, a marked line pauses', () => {
    const ws = tempDir('trajgate-ws-');
    const lines = [
      `{"kind":"command","target":"${ws}/tests"}`,
      `{"kind":"write","target":"${ws}/report.json"}`,
      '{"kind":"network","target":"https://example.test/api"}',
      '{"kind":"network","target":"https://example.test/api"}',
      `{"kind":"read","target":"${ws}/a","session":"s2","toolChange":{"server":"bridge","digest":"abc"}}`,
    ];
    const r = runCli(['replay', '-', '--workspace', ws], { input: lines.join('\n') + '\n' });
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('ALLOW\nALLOW\nREVIEW: network\nPAUSE: network\nPAUSE: tool-changed\n');
  });
});
