import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import type { EventInput } from '../../src/event/event.js';
import { normalizeEvent } from '../../src/event/normalize.js';
import { validateEventInput, validateRecordedEvent } from '../../src/event/validate.js';
import { compilePolicy } from '../../src/guard/compile.js';
import { Guard } from '../../src/guard/guard.js';
import { tempDir } from '../helpers/tmp.js';

/** A sentinel out of place pauses at once, whatever allows the destination, and replays so. */
const KINDS = new Set(['read', 'write', 'command', 'network', 'internal']);
const guardFor = (yaml: string) => new Guard(compilePolicy(parseConfig(yaml, 'x.yaml', tempDir())));
const OUT = { credential: 'github', where: 'header X-Token' };

const judge = (guard: Guard, input: EventInput, approved = false) =>
  guard.inspect(
    normalizeEvent(input, { session: 'a', source: 'proxy', ts: 1000, workspace: '/ws', approved }),
  );

describe('credential-exfiltration in the guard', () => {
  const guard = guardFor('version: 1\nworkspace: /ws\nnetwork:\n  allow: ["evil.test:443"]\n');

  it.each<[string, EventInput, boolean, string]>([
    [
      'an allowed host',
      { kind: 'network', target: 'https://evil.test/x', exfiltration: OUT },
      false,
      "credential github's sentinel in header X-Token of a request to evil.test:443: credential-exfiltration",
    ],
    [
      'approved once by an operator',
      { kind: 'network', target: 'https://evil.test/x', exfiltration: OUT },
      true,
      'a request to evil.test:443',
    ],
    [
      'a command line',
      {
        kind: 'command',
        target: 'curl',
        command: 'curl x',
        exfiltration: { ...OUT, where: 'command line' },
      },
      false,
      'in command line of command curl',
    ],
  ])('%s: PAUSE at once', (_name, input, approved, reason) => {
    const d = judge(guard, input, approved);
    expect(d).toMatchObject({ verdict: 'PAUSE', boundary: 'credential-exfiltration', count: 1 });
    expect(d.counted).toEqual({ 'credential-exfiltration': 1 });
    expect(d.reason).toContain(reason);
  });

  it('without a sentinel out of place the same request is allowed (control)', () => {
    expect(judge(guard, { kind: 'network', target: 'https://evil.test/x' }).verdict).toBe('ALLOW');
  });

  it('counts on: a second one is crossing 2', () => {
    const g = guardFor('version: 1\nworkspace: /ws\n');
    const input = { kind: 'network', target: 'https://evil.test/x', exfiltration: OUT };
    g.commit('a', 1000, judge(g, input));
    g.resume('a', false);
    expect(judge(g, input).count).toBe(2);
  });

  it('no sender may claim it; a journal record carries it back to replay', () => {
    expect(() =>
      validateEventInput({ kind: 'network', target: 'https://x.test/', exfiltration: OUT }, KINDS),
    ).toThrow(/"exfiltration" is set by trajgate/);
    const { input } = validateRecordedEvent(
      { kind: 'network', target: 'https://x.test/', exfiltration: OUT, credentials: ['aws'] },
      KINDS,
    );
    expect(input).toMatchObject({ exfiltration: OUT, credentials: ['aws'] });
    expect(() =>
      validateRecordedEvent(
        { kind: 'network', target: 'https://x.test/', exfiltration: 'x' },
        KINDS,
      ),
    ).toThrow(/"exfiltration" must be/);
  });

  it('no config names its boundary', () => {
    let details: readonly string[] = [];
    try {
      parseConfig(
        'version: 1\nworkspace: /ws\npolicy:\n  boundaries:\n    credential-exfiltration: { kinds: [read], pauseAt: 3 }\n',
        'x.yaml',
        tempDir(),
      );
    } catch (err) {
      details = (err as { details: readonly string[] }).details;
    }
    expect(details.join('\n')).toMatch(/credential-exfiltration.*trajgate's own boundary/);
  });
});
