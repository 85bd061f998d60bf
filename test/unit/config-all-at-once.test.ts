import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { TrajgateError } from '../../src/errors.js';

/**
 * Errors come in one pass, not in waves: the checks zod skips while a key fails (an agent's
 * role, a rule's crossing, a boundary's counts) run on the rest, and nothing is reported that
 * only a removed key's default would make wrong.
 */
function details(text: string): string[] {
  try {
    parseConfig(text, 'f.yaml', '/srv', {});
  } catch (err) {
    if (err instanceof TrajgateError) return [...err.details];
    throw err;
  }
  return [];
}

describe('config errors all at once', () => {
  it.each([
    [
      'a schema error and the cross-key ones it used to hide, sorted by line',
      [
        'version: 2',
        'agents:',
        '  - { id: a, token: aaaaaaaaaaaaaaaaaaaa, roles: [x] }',
        'policy:',
        '  countBy: nope',
        '  sequences:',
        '    - { name: s, after: { crossing: deploy }, then: { kind: network }, within: 5m, verdict: PAUSE }',
      ],
      [
        'f.yaml:1:1: version: expected 1, got number 2',
        'f.yaml:3:51: agents[0].roles[0]: no role "x" (no roles are defined)',
        'f.yaml:5:3: policy.countBy: expected boundary | target, got "nope"',
        'f.yaml:7:27: policy.sequences[0] (s).after.crossing: no boundary "deploy" (boundaries: workspace, network, tool)',
      ],
    ],
    [
      "a bad role name: no 'no role' for the agent that names it",
      [
        'version: 1',
        'roles:',
        '  "1bad": {}',
        'agents:',
        '  - { id: a, token: aaaaaaaaaaaaaaaaaaaa, roles: [x1] }',
      ],
      ['f.yaml:3:3: roles.1bad: Invalid key in record'],
    ],
    [
      "a bad pauseAt: no 'reviewAt must be below' the default pauseAt",
      ['version: 1', 'policy:', '  boundaries:', '    network: { reviewAt: 3, pauseAt: x }'],
      ['f.yaml:4:29: policy.boundaries.network.pauseAt: expected number, got "x"'],
    ],
    [
      "a bad bridge.unmapped: no 'no boundary tool' from its default",
      [
        'version: 1',
        'bridge: { unmapped: allw }',
        'policy:',
        '  sequences:',
        '    - { name: s, after: { crossing: tool }, then: { kind: network }, within: 5m, verdict: PAUSE }',
      ],
      ['f.yaml:2:11: bridge.unmapped: expected allow | review | pause, got "allw"'],
    ],
    [
      'a duplicate key, named, beside the schema errors',
      ['version: 1', 'policy:', '  pause: stop', '  pause: block', 'bogus: 1'],
      ['f.yaml:4:3: policy.pause: Map keys must be unique', 'f.yaml:5:1: bogus: unknown key'],
    ],
  ])('%s', (_, lines, expected) => {
    expect(details(lines.join('\n') + '\n')).toEqual(expected);
  });

  it('one kind alone keeps its heading; several are counted', () => {
    const heading = (text: string) => {
      try {
        parseConfig(text, 'f.yaml', '/srv', {});
      } catch (err) {
        return (err as TrajgateError).message;
      }
      return '';
    };
    expect(heading('version: 1\nversion: 1\n')).toBe('f.yaml: not valid YAML');
    expect(heading('version: 1\nversion: 1\nbogus: 1\n')).toBe('f.yaml: 2 error(s)');
    expect(heading('version: 1\npolicy: [\n')).toBe(
      'f.yaml: not valid YAML (other errors are looked for once it parses)',
    );
  });
});
