import { describe, expect, it } from 'vitest';
import { readToolList } from '../../src/event/tool-definitions.js';
import { FILESYSTEM_TOOLS, toolTargets } from '../../src/event/tool-map.js';
import { hintedToolMap } from '../../src/gateway/tool-hints.js';
import { ToolPinState } from '../../src/gateway/tool-pin-state.js';

/** Annotations are hints: they map an unknown tool as read-only only once an operator pinned it. */
const TOOLS = [
  { name: 'lookup', annotations: { readOnlyHint: true } },
  { name: 'wipe', annotations: { readOnlyHint: true, destructiveHint: true } },
  { name: 'plain' },
  { name: 'read_file', annotations: { readOnlyHint: true } },
];

function pinned(by: string, tools: unknown[] = TOOLS) {
  const state = new ToolPinState();
  const list = readToolList(tools);
  state.apply({
    type: 'tools',
    change: 'pinned',
    server: 'bridge',
    digest: list.digest,
    by,
    tools: list.tools,
  } as never);
  return state;
}
const targets = (state: ToolPinState, tool: string, server = 'bridge') =>
  toolTargets(hintedToolMap(FILESYSTEM_TOOLS, server, state), tool, { path: '/ws/a' });

describe('annotations as hints', () => {
  it.each<[string, string, string, unknown]>([
    ['read-only, pinned by an operator: no path, no tool crossing', 'operator', 'lookup', []],
    ['read-only and destructive: a tool event', 'operator', 'wipe', null],
    ['no hint: a tool event', 'operator', 'plain', null],
    ['read-only pinned at first use: a tool event', 'first-use', 'lookup', null],
  ])('%s', (_what, by, tool, expected) => {
    expect(targets(pinned(by), tool)).toEqual(expected);
  });

  it('a mapped tool keeps its mapping whatever its hint', () => {
    expect(targets(pinned('operator'), 'read_file')).toMatchObject([
      { kind: 'read', target: '/ws/a' },
    ]);
  });

  it('another server’s pins change nothing; a pending list changes nothing', () => {
    expect(targets(pinned('operator'), 'lookup', 'other')).toBeNull();
    const state = pinned('operator', [{ name: 'plain' }]);
    const map = hintedToolMap(FILESYSTEM_TOOLS, 'bridge', state);
    const hinted = readToolList([{ name: 'plain' }, TOOLS[0]]);
    state.apply({
      type: 'tools',
      change: 'changed',
      server: 'bridge',
      session: 's',
      digest: hinted.digest,
      pinned: 'x',
      diff: [],
      tools: hinted.tools,
    } as never);
    expect(toolTargets(map, 'lookup', {})).toBeNull();
  });

  it('follows the pins: a later operator pin maps it, a pin without the hint unmaps it', () => {
    const state = pinned('first-use');
    const map = hintedToolMap(FILESYSTEM_TOOLS, 'bridge', state);
    expect(toolTargets(map, 'lookup', {})).toBeNull();
    const list = readToolList(TOOLS);
    state.apply({
      type: 'tools',
      change: 'pinned',
      server: 'bridge',
      digest: list.digest,
      by: 'alice',
      tools: list.tools,
    } as never);
    expect(toolTargets(map, 'lookup', {})).toEqual([]);
    const plain = readToolList([{ name: 'lookup' }]);
    state.apply({
      type: 'tools',
      change: 'pinned',
      server: 'bridge',
      digest: plain.digest,
      by: 'alice',
      tools: plain.tools,
    } as never);
    expect(toolTargets(map, 'lookup', {})).toBeNull();
  });
});
