import type { ToolEventSpec, ToolMap } from '../event/tool-map.js';
import type { Pinned } from '../review/tool-pins-dump.js';
import type { ToolPinState } from './tool-pin-state.js';

/**
 * Whether a pinned tool's annotations let it be judged as read-only: pinned by an operator
 * after review (a server's own word at first use is no review), `readOnlyHint: true`, and not
 * `destructiveHint: true`. Annotations are hints (MCP 2025-11-25): trusted only so.
 */
export function readOnlyByHint(pinned: Pinned, tool: string): boolean {
  if (pinned.by === 'first-use') return false;
  const annotations = pinned.tools.find((t) => t.name === tool)?.annotations;
  if (typeof annotations !== 'object' || annotations === null) return false;
  const { readOnlyHint, destructiveHint } = annotations as Record<string, unknown>;
  return readOnlyHint === true && destructiveHint !== true;
}

/**
 * The bridge's tool map with the tools of `server` that its operator-pinned annotations say
 * are read-only mapped as naming no path (as `list_allowed_directories`: no `tool` crossing).
 * Mapped tools keep their mapping; the map follows every pin of the server.
 */
export function hintedToolMap(base: ToolMap, server: string, pins: ToolPinState): ToolMap {
  const map: Record<string, readonly ToolEventSpec[]> = Object.assign(Object.create(null), base);
  let hinted: string[] = [];
  const update = (pinned: Pinned) => {
    for (const name of hinted) delete map[name];
    hinted = pinned.tools
      .map((t) => t.name)
      .filter((name) => !Object.hasOwn(base, name) && readOnlyByHint(pinned, name));
    for (const name of hinted) map[name] = [];
  };
  const now = pins.pinned(server);
  if (now) update(now);
  pins.onPinned((s, pinned) => {
    if (s === server) update(pinned);
  });
  return map;
}
