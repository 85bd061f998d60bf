import type { ToolDefinitionView } from '../wire.js';

/** What is pinned for a server (gateway/tool-pin-state.ts). */
export interface Pinned {
  readonly digest: string;
  readonly pinnedAt: string;
  readonly by: string;
  readonly tools: readonly ToolDefinitionView[];
}

/** What a snapshot's head holds of the tool pins (gateway/tool-pin-state.ts). */
export interface ToolPinsDump {
  readonly servers: [string, ServerDump][];
  readonly marks: [string, [string, string][]][];
}
export interface ServerDump {
  readonly pinned: Pinned | null;
  readonly pending: {
    readonly digest: string;
    readonly tools: readonly ToolDefinitionView[];
    readonly complete: boolean;
    readonly sessions: string[];
  }[];
}
